// Per-kernel statistics by HTA kernel type: the kernel table of HTA get_gpu_kernel_breakdown
// (hta/analyzers/breakdown_analysis.py, _aggr_gpu_kernel_time; holistictraceanalysis 0.5.0).
//
// Per device and HTA type (COMPUTATION, COMMUNICATION, MEMORY; hta_kernel_type()), over the GPU
// events and stream-carrying sync waits (HTA's stream != -1 rows) after HTA's last-step filter: per
// name, the duration's sum, max, min, mean and sample standard deviation (0 for one event), sorted
// by sum descending. With more than `top` names, HTA folds into "others" every name whose running
// sum of `sum` (in that order) exceeds the `duration_ratio` quantile (linear) of the running sums,
// and every name past the first `top`. The folded names are summarised by their count and total;
// HTA then re-aggregates its whole table by name, which turns each kept row's max/min/mean into its
// sum — the real per-kernel statistics are reported here instead.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleetscope/analyzer/capture_data.h"

namespace fleetscope::analyzer {

struct KernelStat {
  std::string name;
  int64_t count = 0;
  int64_t sum_ns = 0, max_ns = 0, min_ns = 0;
  double mean_ns = 0, std_ns = 0;
};

struct KernelTypeStats {
  int32_t device = 0;
  std::string kernel_type;      // "COMPUTATION", "COMMUNICATION" or "MEMORY"
  std::vector<KernelStat> top;  // by sum descending
  int64_t others_kernels = 0;   // names folded into "others"
  int64_t others_sum_ns = 0;
};

struct KernelStatsOptions {
  size_t top = 10;              // HTA num_kernels
  double duration_ratio = 0.8;  // HTA duration_ratio
  bool hta_last_step_filter = true;
};

std::vector<KernelTypeStats> kernel_stats(const CaptureData& data,
                                          const KernelStatsOptions& options = {});

// HTA get_gpu_user_annotation_breakdown (breakdown_analysis.py; use_gpu_annotation=True,
// num_kernels=1000, duration_ratio=0.8): the same per-name statistics and fold over the
// gpu_user_annotation ranges (CaptureData::gpu_annotations), per capture (HTA: per rank).
// They are CPU-side events for HTA's last-step filter: kept when they start before the last
// ProfilerStep.
struct AnnotationStats {
  std::vector<KernelStat> top;  // by sum descending
  int64_t others_names = 0, others_sum_ns = 0;
};
AnnotationStats gpu_user_annotation_stats(const CaptureData& data, size_t top = 1000,
                                          double duration_ratio = 0.8,
                                          bool hta_last_step_filter = true);

}  // namespace fleetscope::analyzer
