#include "fleetscope/lanes/process_identity.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fleetscope::lanes {
namespace {

// Reads /proc/PID/stat into `buffer`; returns the text after the command name's closing ')' (the
// name may itself contain spaces and parentheses, so the last ')' is the delimiter), or nullptr.
const char* stat_fields(pid_t pid, char* buffer, size_t size) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  ssize_t n = ::read(fd, buffer, size - 1);
  ::close(fd);
  if (n <= 0) return nullptr;
  buffer[n] = '\0';
  const char* close_paren = std::strrchr(buffer, ')');
  return close_paren ? close_paren + 1 : nullptr;
}

}  // namespace

uint64_t process_start_ticks(pid_t pid) {
  char buffer[1024];
  const char* fields = stat_fields(pid, buffer, sizeof buffer);
  if (!fields) return 0;
  // After ") " come field 3 (state) ... field 22 (starttime): skip 19 separators.
  const char* p = fields;
  for (int field = 3; field < 22 && *p; ++field) {
    while (*p == ' ') ++p;
    while (*p && *p != ' ') ++p;
  }
  return std::strtoull(p, nullptr, 10);
}

ProcessIdentity current_process() {
  ProcessIdentity identity;
  identity.pid = ::getpid();
  identity.start_ticks = process_start_ticks(identity.pid);
  return identity;
}

bool process_alive(const ProcessIdentity& identity) {
  if (identity.pid <= 0) return false;
  if (::kill(identity.pid, 0) != 0 && errno == ESRCH) return false;
  char buffer[1024];
  const char* fields = stat_fields(identity.pid, buffer, sizeof buffer);
  if (!fields) return true;  // exists (kill succeeded or EPERM) but /proc is hidden: trust the pid
  while (*fields == ' ') ++fields;
  if (*fields == 'Z' || *fields == 'X') return false;  // killed, not yet reaped: its memory is gone
  if (identity.start_ticks == 0) return true;
  return process_start_ticks(identity.pid) == identity.start_ticks;
}

}  // namespace fleetscope::lanes
