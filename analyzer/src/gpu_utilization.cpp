#include "fleetscope/analyzer/gpu_utilization.h"

#include <algorithm>

#include "fleetscope/analyzer/attribution.h"
#include "fleetscope/analyzer/sorted_union.h"

namespace fleetscope::analyzer {

double utilization_ratio(int64_t busy_ns, int64_t window_ns) {
  return window_ns > 0 ? double(busy_ns) / double(window_ns) : 0.0;
}

GpuUtilization measure_gpu_utilization(const IntervalSet& work, Interval work_span,
                                       std::optional<Interval> steps) {
  GpuUtilization u;
  u.window_is_steps = steps.has_value();
  u.window = steps ? *steps : work_span;
  u.busy_ns = covered_length(work, u.window);
  return u;
}

std::vector<GpuUtilization> gpu_utilization(const CaptureData& data) {
  std::vector<GpuUtilization> out;
  const std::optional<Interval> steps = data.step_span();
  for (const auto& [device, busy] : data.busy_by_device) {
    GpuUtilization u =
        measure_gpu_utilization(busy, data.device_span(device).value_or(Interval{}), steps);
    u.device = device;
    out.push_back(u);
  }
  return out;
}

std::optional<double> capture_gpu_utilization(const CaptureData& data) {
  int64_t busy = 0, window = 0;
  for (const GpuUtilization& u : gpu_utilization(data))
    busy += u.busy_ns, window += u.window.length();
  if (window <= 0) return std::nullopt;
  return utilization_ratio(busy, window);
}

std::optional<Interval> steps_span(const std::vector<Interval>& iterations) {
  if (iterations.empty()) return std::nullopt;
  Interval span = iterations.front();
  for (const Interval& it : iterations)
    span.begin = std::min(span.begin, it.begin), span.end = std::max(span.end, it.end);
  return span;
}

GpuUtilization job_gpu_utilization(const CaptureData& data, int64_t workflow_id, int32_t device,
                                   const std::vector<uint32_t>& members) {
  std::vector<Interval> steps;
  for (const auto& it : data.iterations) {
    if (it.globalPid && workflow_of_process(data, *it.globalPid) != workflow_id) continue;
    steps.push_back({it.start, it.end});
  }
  SortedUnion busy;  // united as read, not copied (sorted_union.h)
  Interval work_span{0, 0};
  if (!members.empty()) work_span = {data.gpu.start[members.front()], INT64_MIN};
  for (uint32_t i : members) {
    busy.add({data.gpu.start[i], data.gpu.end[i]});
    work_span.end = std::max(work_span.end, data.gpu.end[i]);
  }
  GpuUtilization u = measure_gpu_utilization(busy.take(), work_span, steps_span(steps));
  u.device = device;
  return u;
}

}  // namespace fleetscope::analyzer
