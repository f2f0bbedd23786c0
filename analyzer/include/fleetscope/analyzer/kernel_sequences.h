// Frequent GPU kernel sequences: HTA get_frequent_cuda_kernel_sequences
// (hta/analyzers/cuda_kernel_analysis.py, holistictraceanalysis 0.5.0).
//
// Roots: the CPU ops whose name contains `operator_name`, at the smallest call depth any of
// them has (depth = how many CPU ops on the same thread enclose it; HTA starts from the
// shallowest ones "to avoid double-counting"), that launched at least `min_pattern_len` GPU
// events. A root's GPU events: those launched by runtime calls on its thread that start inside
// it (HTA's call-stack subtree), in GPU start order. Pattern = (root op name, those events'
// names); per pattern its count, the summed GPU duration of its events (HTA "GPU kernel
// duration") and the summed root duration (HTA "CPU op duration"). Sorted as HTA sorts: count
// descending, then the pattern text "op|k1|k2|..." ascending.
//
// fleetscope adds per pattern the gaps between consecutive events of each occurrence (GPU start
// − previous end, at least 0): the launch and scheduling time one fused kernel would not pay —
// the fusion rule's estimated saving.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleetscope/analyzer/capture_data.h"

namespace fleetscope::analyzer {

struct KernelSequence {
  std::string op;
  std::vector<std::string> kernels;
  int64_t count = 0;
  int64_t gpu_ns = 0;           // Σ durations of the pattern's GPU events over its occurrences
  int64_t cpu_op_ns = 0;        // Σ root-op durations
  int64_t gap_ns = 0;           // Σ gaps between consecutive events inside each occurrence
  std::string pattern() const;  // "op|k1|k2|..."
};

struct KernelSequenceOptions {
  std::string operator_name = "aten::";
  size_t min_pattern_len = 3;  // HTA default
  // false: HTA's roots, the matching ops at the smallest depth of any matching op in the
  // capture (one shallow match elsewhere, e.g. an aten::empty outside the steps, hides every
  // deeper one). true: in each op chain the outermost matching op (what the fusion rule uses).
  bool outermost_per_chain = false;
};

std::vector<KernelSequence> frequent_kernel_sequences(const CaptureData& data,
                                                      const KernelSequenceOptions& options = {});

}  // namespace fleetscope::analyzer
