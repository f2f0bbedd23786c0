#include "fleetscope/analyzer/diff.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "fleetscope/analyzer/metrics.h"

namespace fleetscope::analyzer {

CaptureSummary summarize(const CaptureData& data) {
  CaptureSummary s;
  // The whole capture (no HTA last-step filter): a diff compares everything that was recorded.
  TemporalBreakdownOptions whole;
  whole.hta_last_step_filter = false;
  IdleTimeOptions idle_options;
  idle_options.hta_last_step_filter = false;
  LaunchStatisticsOptions launch_options;
  launch_options.hta_last_step_filter = false;
  for (const auto& t : temporal_breakdown(data, whole)) {
    ++s.devices;
    s.span_ns += t.span_ns, s.idle_ns += t.idle_ns, s.compute_ns += t.compute_ns;
    s.non_compute_ns += t.non_compute_ns;
  }
  s.busy_ns = s.span_ns - s.idle_ns;
  s.utilization = capture_gpu_utilization(data).value_or(0.0);
  for (const auto& i : idle_time_breakdown(data, idle_options)) {
    s.host_wait_ns += i.host_wait_ns, s.kernel_wait_ns += i.kernel_wait_ns;
    s.other_idle_ns += i.other_ns;
  }
  for (auto k : data.gpu.kind) {
    s.kernels += k == GpuEventKind::kernel;
    s.memcpys += k == GpuEventKind::memcpy;
    s.memsets += k == GpuEventKind::memset;
  }
  auto launches = launch_statistics(data, launch_options);
  s.launches = static_cast<int64_t>(launches.launches.size());
  s.short_kernels = launches.short_kernels;
  s.launch_delay_p50_ns = launches.launch_delay_p50_ns;
  s.launch_delay_p95_ns = launches.launch_delay_p95_ns;
  auto steps = step_stats(data);
  s.steps = steps.count;
  s.step_median_ns = steps.median_ns;
  return s;
}

CaptureDiff diff_captures(const CaptureData& before, const CaptureData& after,
                          size_t kernel_limit) {
  CaptureDiff d;
  d.before = summarize(before);
  d.after = summarize(after);
  auto metric = [&](const char* name, double b, double a) { d.metrics.push_back({name, b, a}); };
  const CaptureSummary& b = d.before;
  const CaptureSummary& a = d.after;
  metric("span_ns", double(b.span_ns), double(a.span_ns));
  metric("busy_ns", double(b.busy_ns), double(a.busy_ns));
  metric("idle_ns", double(b.idle_ns), double(a.idle_ns));
  metric("gpu_utilization", b.utilization, a.utilization);
  metric("compute_ns", double(b.compute_ns), double(a.compute_ns));
  metric("non_compute_ns", double(b.non_compute_ns), double(a.non_compute_ns));
  metric("host_wait_ns", double(b.host_wait_ns), double(a.host_wait_ns));
  metric("kernel_wait_ns", double(b.kernel_wait_ns), double(a.kernel_wait_ns));
  metric("kernels", double(b.kernels), double(a.kernels));
  metric("launches", double(b.launches), double(a.launches));
  metric("short_kernels", double(b.short_kernels), double(a.short_kernels));
  metric("launch_delay_p50_ns", double(b.launch_delay_p50_ns), double(a.launch_delay_p50_ns));
  metric("launch_delay_p95_ns", double(b.launch_delay_p95_ns), double(a.launch_delay_p95_ns));
  metric("steps", double(b.steps), double(a.steps));
  metric("step_median_ns", double(b.step_median_ns), double(a.step_median_ns));

  std::map<std::string, KernelDelta> by_name;
  for (const auto& k : kernel_summary(before)) {
    auto& e = by_name[k.name];
    e.name = k.name, e.count_before = k.count, e.total_ns_before = k.total_ns;
  }
  for (const auto& k : kernel_summary(after)) {
    auto& e = by_name[k.name];
    e.name = k.name, e.count_after = k.count, e.total_ns_after = k.total_ns;
  }
  for (auto& [name, e] : by_name) d.kernels.push_back(e);
  std::sort(d.kernels.begin(), d.kernels.end(), [](const KernelDelta& x, const KernelDelta& y) {
    const int64_t dx = std::llabs(x.total_ns_after - x.total_ns_before);
    const int64_t dy = std::llabs(y.total_ns_after - y.total_ns_before);
    return dx != dy ? dx > dy : x.name < y.name;
  });
  if (kernel_limit && d.kernels.size() > kernel_limit) d.kernels.resize(kernel_limit);
  return d;
}

}  // namespace fleetscope::analyzer
