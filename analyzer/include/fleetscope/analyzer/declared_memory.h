// Memory of a job measured elsewhere, for captures that carry no memory events (a trace recorded
// without torch.profiler's profile_memory, such as the bundled HTA samples). The source is
// declared by the user and printed with every figure taken from it; nothing is guessed.
//
// Supported source: the workloads table of Salus (SymbioticLab/Salus tests/workloads.csv,
// Apache-2.0): one row per TensorFlow training run alone on a GPU, no header,
//   name_bs_duration, jct_s, peak_mb, iterations, command
// e.g. "alexnet_100_1min,66.886,1396.5,1332,python ...". peak_mb is the run's peak GPU memory;
// jct_s / iterations is its time per iteration.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "fleetscope/analyzer/consolidation.h"

namespace fleetscope::analyzer {

struct DeclaredMemory {
  std::string source;  // "FILE:NAME", printed with the figures
  int64_t peak_bytes = 0;
  int64_t iteration_ns = 0;  // 0 when the source has none
};

// Reads a Salus workloads table: name -> its row. Throws InputError naming the file, the line and
// what was expected for a malformed row or a value out of range (untrusted input).
std::map<std::string, DeclaredMemory> read_salus_workloads(const std::string& path);

// Gives a candidate without measured memory the declared figures and re-decides its verdict.
// The peak is taken whole as persistent memory P (T = 0): Salus reports one peak per run, not
// its split, and P = peak is the safe side of the lane condition sum(P) + max(T) <= C (it
// reserves each job's whole peak). The iteration time fills in only when the capture measured
// none. A candidate with measured memory is left as it is.
void apply_declared_memory(ConsolidationCandidate& candidate, const DeclaredMemory& memory,
                           const ConsolidationOptions& options = {});

}  // namespace fleetscope::analyzer
