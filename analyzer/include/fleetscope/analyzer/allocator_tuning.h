// Allocator settings for one-shot analysis processes (the `fleetscope analyze`, `report`, `fleet`,
// `diff` and `candidates` commands, and the analyzer benchmarks).
#pragma once

namespace fleetscope::analyzer {

// The analyzer builds and drops many large arrays (interval lists of millions of events). glibc
// serves every allocation above 32 MiB with its own mmap and unmaps it on free, so each such
// array costs fresh page faults and zeroed pages again: on 10M events that was about a third of
// the full rule set's time. This keeps freed memory in the process heap for reuse instead (no
// mmap for large blocks, no trimming): 10M-event full rule set 6.1 s -> 3.8 s, peak RSS of that
// benchmark 3.37 -> 3.56 GB (docs/benchmarks.md). The memory goes back to the system only at exit,
// so this is not for long-running daemons or code inside users' jobs. A no-op outside glibc.
void keep_freed_memory_for_reuse();

}  // namespace fleetscope::analyzer
