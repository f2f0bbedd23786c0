// Run-to-run comparison: the same metrics on two captures (before / after a change), as deltas.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleetscope/analyzer/capture_data.h"

namespace fleetscope::analyzer {

// Capture-wide metrics (all devices summed; fractions over the summed HTA spans).
struct CaptureSummary {
  int64_t devices = 0;
  int64_t span_ns = 0, busy_ns = 0, idle_ns = 0, compute_ns = 0, non_compute_ns = 0;
  int64_t host_wait_ns = 0, kernel_wait_ns = 0, other_idle_ns = 0;
  int64_t kernels = 0, memcpys = 0, memsets = 0;
  int64_t launches = 0, short_kernels = 0, launch_delay_p50_ns = 0, launch_delay_p95_ns = 0;
  int64_t steps = 0, step_median_ns = 0;
  double utilization = 0;  // GPU utilization (gpu_utilization.h) over all devices
};
CaptureSummary summarize(const CaptureData& data);

struct MetricDelta {
  std::string metric;  // e.g. "idle_ns"
  double before = 0, after = 0;
  double delta() const { return after - before; }
  // after / before; 0 when before is 0.
  double ratio() const { return before != 0 ? after / before : 0.0; }
};

struct KernelDelta {
  std::string name;
  int64_t count_before = 0, count_after = 0;
  int64_t total_ns_before = 0, total_ns_after = 0;
};

struct CaptureDiff {
  CaptureSummary before, after;
  std::vector<MetricDelta> metrics;
  std::vector<KernelDelta> kernels;  // largest absolute change in total time first
};

CaptureDiff diff_captures(const CaptureData& before, const CaptureData& after,
                          size_t kernel_limit = 15);

}  // namespace fleetscope::analyzer
