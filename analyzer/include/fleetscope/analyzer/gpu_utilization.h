// GPU utilization: the one figure fleetscope calls by that name. `analyze`, `report`, `fleet`,
// `diff`, `candidates`, the daemon's trace summary and the GUI all take it from here, so one
// capture shows one GPU utilization wherever it appears. Busy ratios with another definition carry
// another name (the profiler plugin's "kernel utilization in steps", HTA's temporal breakdown,
// NVML's utilization rate); docs/analyzer.md "One definition per number" lists them.
//
//   GPU utilization = |∪ GPU work ∩ W| / |W|
//   GPU work: the kernels, memcpys and memsets on the device (of one job, for a job's figure);
//   W: the recorded steps' span [first step start, last step end] when there are steps (the
//      PyTorch profiler's denominator), else the first-to-last span of that GPU work (HTA's).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "fleetscope/analyzer/capture_data.h"
#include "fleetscope/analyzer/intervals.h"

namespace fleetscope::analyzer {

// The ratio, also for totals over devices, jobs or captures (Σ busy / Σ window); 0 for an empty
// window.
double utilization_ratio(int64_t busy_ns, int64_t window_ns);

struct GpuUtilization {
  int32_t device = 0;
  Interval window;
  bool window_is_steps = false;
  int64_t busy_ns = 0;  // GPU work inside the window
  double utilization() const { return utilization_ratio(busy_ns, window.length()); }
};

// The definition. `work`: the united GPU work; `work_span`: its first-to-last span (zero-length
// events included); `steps`: the steps' span, when steps were recorded.
GpuUtilization measure_gpu_utilization(const IntervalSet& work, Interval work_span,
                                       std::optional<Interval> steps);

// Per device of a capture: all of its work, W from the capture's steps (CaptureData::step_span).
std::vector<GpuUtilization> gpu_utilization(const CaptureData& data);

// The capture's figure over all its devices (Σ busy / Σ window of gpu_utilization()); none
// without GPU work.
std::optional<double> capture_gpu_utilization(const CaptureData& data);

// One job on one device: `members` are its GPU events (indexes into data.gpu in start order, as
// attribution.h's events_by_workflow_device gives them); W from the job's iterations (those of its
// processes, and iterations attributed to no process).
GpuUtilization job_gpu_utilization(const CaptureData& data, int64_t workflow_id, int32_t device,
                                   const std::vector<uint32_t>& members);

// The steps' span of a list of iterations: [earliest start, latest end]; none when empty.
std::optional<Interval> steps_span(const std::vector<Interval>& iterations);

}  // namespace fleetscope::analyzer
