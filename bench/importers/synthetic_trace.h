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
// Reuses an existing file only when `out_path`.events records the same event count and the same
// source (its canonical path, size and modification time): a file made from another --source must
// never be measured as this one.
SyntheticTrace make_synthetic_trace(const std::string& source, int64_t events,
                                    const std::string& out_path);

// Where the synthetic trace of `events` events from `source` lives in `dir`: the name carries the
// source's stem and a hash of its identity, so traces of different sources never share a file.
std::string synthetic_trace_path(const std::string& dir, const std::string& source, int64_t events);

}  // namespace fleetscope::bench
