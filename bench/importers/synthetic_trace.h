// Synthetic Kineto traces of any size, made by replicating a real one: every element of the
// source's traceEvents is written again per replica with its "ts" shifted past the previous
// replica and its correlation / External id values offset, so launches still pair with their GPU
// work. The other top-level members are copied, baseTimeNanoseconds last (where Kineto writes it).
// Written to a file (never committed): 1e7 events of a ResNet trace are several GB.
#pragma once

#include <cstdint>
#include <string>

namespace fleetscope::bench {

struct SyntheticTrace {
  std::string path;
  int64_t events = 0;
  int64_t bytes = 0;
  int64_t source_events = 0;
};

// Writes `out_path` with exactly `events` events replicated from `source` (.json or .json.gz).
// Reuses an existing file of the same event count (recorded in `out_path`.events).
SyntheticTrace make_synthetic_trace(const std::string& source, int64_t events,
                                    const std::string& out_path);

}  // namespace fleetscope::bench
