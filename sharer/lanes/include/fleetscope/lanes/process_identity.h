#pragma once
// Identity of a process that survives pid reuse: the pid plus its start time in clock ticks since
// boot (field 22 of /proc/PID/stat, proc(5)). A ledger slot records both, so a slot whose pid was
// recycled by an unrelated process is recognised as dead.

#include <sys/types.h>

#include <cstdint>

namespace fleetscope::lanes {

struct ProcessIdentity {
  pid_t pid = 0;
  uint64_t start_ticks = 0;  // 0: unknown (no /proc); liveness then rests on the pid alone
};

// The identity of the calling process.
ProcessIdentity current_process();

// Start time of `pid` from /proc, or 0 when it cannot be read.
uint64_t process_start_ticks(pid_t pid);

// True while `identity` names a running process: the pid exists, is not a zombie, and (when both
// are known) has the recorded start time.
bool process_alive(const ProcessIdentity& identity);

}  // namespace fleetscope::lanes
