// The memory budget of the reading commands (read_policy.h).
//
// How it is enforced, and why so: the memory a hostile file can make a reader take is allocated by
// many hands (SQLite's page cache and sorter, the analyzer's columns and interval lists, JSON
// documents, simdjson, zlib), so no accounting inside one of them bounds the command. The kernel
// does: RLIMIT_DATA counts every private writable mapping of the process (brk heap, malloc's mmap
// chunks and arenas as they are made writable, thread stacks), not the program's code or mapped
// files, and refuses the mapping that would pass it; malloc then returns null, operator new calls
// the new-handler installed here, and SQLite answers SQLITE_NOMEM. RLIMIT_AS would also count
// address space reserved but never made writable (malloc reserves 64 MiB per thread arena) and
// every shared library; SQLite's sqlite3_hard_heap_limit64 would bound SQLite alone. The limit is
// set relative to what the process holds when the command starts, so that the budget is what the
// command may add, in the `fleetscope` program as in a test that runs commands in its own process.
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstring>
#include <mutex>

#include "fleetscope/store/input_files.h"
#include "fleetscope/store/read_policy.h"
#include "sqlite_errors.h"

namespace fleetscope::store {
namespace {

std::atomic<uint64_t> g_budget_bytes{0};
std::mutex g_budget_mutex;
bool g_limit_saved = false;
rlimit g_saved_limit{};
std::new_handler g_saved_handler = nullptr;
thread_local std::string t_reading;

// The process's data memory now (VmData, what RLIMIT_DATA is compared with), in bytes.
uint64_t data_bytes_now() {
  FILE* status = fopen("/proc/self/status", "re");
  if (!status) return 0;
  char line[256];
  uint64_t kib = 0;
  while (fgets(line, sizeof line, status))
    if (sscanf(line, "VmData: %" SCNu64 " kB", &kib) == 1) break;
  fclose(status);
  return kib * 1024;
}

void format_size(char* text, size_t size, uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30) && bytes % (uint64_t{1} << 30) == 0)
    snprintf(text, size, "%" PRIu64 " GiB", bytes >> 30);
  else if (bytes >= (uint64_t{1} << 20))
    snprintf(text, size, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  else
    snprintf(text, size, "%" PRIu64 " KiB", (bytes + 1023) / 1024);
  // "64.0 MiB" reads as "64 MiB".
  if (char* fraction = strstr(text, ".0 MiB"))
    memmove(fraction, fraction + 2, strlen(fraction + 2) + 1);
}

[[noreturn]] void throw_budget_exceeded() {
  throw MemoryBudgetExceeded(t_reading.c_str(), g_budget_bytes.load());
}

}  // namespace

MemoryBudgetExceeded::MemoryBudgetExceeded(const char* file, uint64_t budget_bytes) noexcept {
  char size[64];
  format_size(size, sizeof size, budget_bytes);
  snprintf(message_, sizeof message_,
           "%s%sout of memory within the memory budget of %s (raise it with --memory-limit SIZE, "
           "0 for none)",
           file && *file ? file : "", file && *file ? ": " : "", size);
}

std::string memory_budget_text() {
  char size[64];
  format_size(size, sizeof size, g_budget_bytes.load());
  return std::string("out of memory within the memory budget of ") + size +
         " (raise it with --memory-limit SIZE, 0 for none)";
}

void set_read_memory_limit(uint64_t bytes) {
  std::lock_guard lock(g_budget_mutex);
  if (!g_limit_saved) {
    if (getrlimit(RLIMIT_DATA, &g_saved_limit) != 0) return;
    g_limit_saved = true;
  }
  if (bytes == 0) {
    setrlimit(RLIMIT_DATA, &g_saved_limit);
    std::set_new_handler(g_saved_handler);
    g_saved_handler = nullptr;
    g_budget_bytes = 0;
    return;
  }
  rlimit limit = g_saved_limit;
  const uint64_t now = data_bytes_now();
  const uint64_t wanted = now > RLIM_INFINITY - bytes ? RLIM_INFINITY : now + bytes;
  // Never above the limit the process was given (an operator's is the stricter one).
  limit.rlim_cur = g_saved_limit.rlim_cur == RLIM_INFINITY
                       ? wanted
                       : std::min<uint64_t>(wanted, g_saved_limit.rlim_cur);
  if (setrlimit(RLIMIT_DATA, &limit) != 0) return;
  g_budget_bytes = bytes;
  std::new_handler previous = std::set_new_handler(throw_budget_exceeded);
  if (previous != throw_budget_exceeded) g_saved_handler = previous;
}

uint64_t read_memory_limit() {
  return g_budget_bytes.load();
}

uint64_t default_read_memory_limit() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  const uint64_t physical = pages > 0 && page_size > 0
                                ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size)
                                : 0;
  return std::clamp<uint64_t>(physical / 2, uint64_t{1} << 30, uint64_t{16} << 30);
}

std::string sqlite_error_message(sqlite3* db) {
  if (sqlite3_errcode(db) == SQLITE_NOMEM && read_memory_limit() != 0) return memory_budget_text();
  return sqlite3_errmsg(db);
}

std::string time_limit_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  return std::string("stopped after the time limit of ") + text +
         " s (raise it with --timeout SECONDS, 0 for none)";
}

void note_reading(const std::string& path) {
  t_reading = path;
  note_input_file(path);  // no output of this process may replace it (input_files.h)
}

}  // namespace fleetscope::store
