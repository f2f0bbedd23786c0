#include "fleetscope/analyzer/metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace fleetscope::analyzer {

HtaStepFilter HtaStepFilter::for_capture(const CaptureData& data, bool enabled) {
  return for_steps(data.iterations, enabled);
}

HtaStepFilter HtaStepFilter::for_steps(const std::vector<store::Iteration>& iterations,
                                       bool enabled) {
  HtaStepFilter f;
  std::set<int64_t> steps;
  int64_t last = INT64_MIN;
  for (const auto& it : iterations)
    if (it.source == "ProfilerStep") steps.insert(it.step), last = std::max(last, it.start);
  f.active = enabled && steps.size() >= 2;
  f.last_step_start = last;
  return f;
}

bool HtaStepFilter::counts_step(const store::Iteration& step) const {
  return !active || step.source != "ProfilerStep" || step.start < last_step_start;
}

// HTA reads one rank's trace, one process, at a time: the rule applies to each process's
// iterations (those of no process form one group), so in a capture of several processes each one's
// own last ProfilerStep is left out, and a process with a single step keeps it.
std::vector<const store::Iteration*> counted_steps(const CaptureData& data) {
  std::map<std::optional<int64_t>, std::vector<store::Iteration>> by_process;
  for (const auto& it : data.iterations) by_process[it.globalPid].push_back(it);
  std::map<std::optional<int64_t>, HtaStepFilter> filters;
  for (const auto& [pid, iterations] : by_process)
    filters.emplace(pid, HtaStepFilter::for_steps(iterations));
  std::vector<const store::Iteration*> out;
  for (const auto& it : data.iterations)
    if (filters.at(it.globalPid).counts_step(it)) out.push_back(&it);
  return out;
}

bool HtaStepFilter::keeps_gpu_event(const CaptureData& data, size_t i) const {
  if (!active) return true;
  const int64_t call = data.launch_call_of[i];
  return call >= 0 && data.runtime.start[call] < last_step_start;
}

bool HtaStepFilter::keeps_gpu_sync(const CaptureData& data, size_t i) const {
  if (!active) return true;
  const int64_t call = data.gpu_syncs.call_of[i];
  return call >= 0 && data.runtime.start[call] < last_step_start;
}

std::vector<TemporalBreakdown> temporal_breakdown(const CaptureData& data,
                                                  const TemporalBreakdownOptions& options) {
  const HtaStepFilter filter = HtaStepFilter::for_capture(data, options.hta_last_step_filter);
  // Stream-carrying sync waits per device (usually few or none).
  const auto& s = data.gpu_syncs;
  std::map<int32_t, std::vector<size_t>> syncs_by_device;
  for (size_t i = 0; i < s.size(); ++i)
    if (filter.keeps_gpu_sync(data, i)) syncs_by_device[s.device[i]].push_back(i);
  std::set<int32_t> devices;
  for (const auto& [device, members] : data.events_by_device) devices.insert(device);
  for (const auto& [device, members] : syncs_by_device) devices.insert(device);

  static const std::vector<uint32_t> no_events;
  std::vector<TemporalBreakdown> out;
  for (int32_t device : devices) {
    auto ev = data.events_by_device.find(device);
    const auto& members = ev == data.events_by_device.end() ? no_events : ev->second;
    std::vector<Interval> compute, sync_all;
    IntervalSet busy;
    int64_t first = INT64_MAX, last = INT64_MIN;
    if (!filter.active) {
      for (uint32_t i : members)
        if (data.gpu.work_class[i] == WorkClass::computation)
          compute.push_back({data.gpu.start[i], data.gpu.end[i]});
      if (auto it = data.busy_by_device.find(device); it != data.busy_by_device.end())
        busy = it->second;
      if (auto span = data.device_span(device)) first = span->begin, last = span->end;
    } else {
      std::vector<Interval> kept;
      for (uint32_t i : members) {
        if (!filter.keeps_gpu_event(data, i)) continue;
        kept.push_back({data.gpu.start[i], data.gpu.end[i]});
        first = std::min(first, kept.back().begin), last = std::max(last, kept.back().end);
        if (data.gpu.work_class[i] == WorkClass::computation) compute.push_back(kept.back());
      }
      busy = unite_sorted(kept);
    }
    if (auto sy = syncs_by_device.find(device); sy != syncs_by_device.end()) {
      for (size_t i : sy->second) {
        sync_all.push_back({s.start[i], s.end[i]});
        if (s.work_class[i] == WorkClass::computation) compute.push_back(sync_all.back());
      }
      std::sort(compute.begin(), compute.end(),
                [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
    }
    for (const Interval& iv : sync_all)
      first = std::min(first, iv.begin), last = std::max(last, iv.end);
    if (first > last) continue;
    // A zero-length sync at the edge still widens the span, as in HTA; the union ignores it.
    const IntervalSet all = sync_all.empty() ? busy : unite(busy, unite(std::move(sync_all)));
    TemporalBreakdown row;
    row.device = device;
    row.span = {first, last};
    row.span_ns = last - first;
    row.idle_ns = row.span_ns - total_length(all);
    row.compute_ns = total_length(unite_sorted(compute));
    row.non_compute_ns = row.span_ns - row.compute_ns - row.idle_ns;
    out.push_back(row);
  }
  return out;
}

std::vector<IdleTimeBreakdown> idle_time_breakdown(const CaptureData& data,
                                                   const IdleTimeOptions& options) {
  std::vector<IdleTimeBreakdown> out;
  const auto& g = data.gpu;
  const HtaStepFilter filter = HtaStepFilter::for_capture(data, options.hta_last_step_filter);
  std::vector<uint32_t> kept;
  for (const auto& [key, all_members] : data.events_by_stream) {
    const std::vector<uint32_t>* members_ptr = &all_members;
    if (filter.active) {
      kept.clear();
      for (uint32_t i : all_members)
        if (filter.keeps_gpu_event(data, i)) kept.push_back(i);
      if (kept.empty()) continue;
      members_ptr = &kept;
    }
    const std::vector<uint32_t>& members = *members_ptr;
    IdleTimeBreakdown row;
    row.device = key.first;
    row.stream = key.second;
    for (size_t k = 1; k < members.size(); ++k) {
      const uint32_t i = members[k];
      const int64_t prev_end = g.end[members[k - 1]];
      const int64_t interval = g.start[i] - prev_end;
      const int64_t call = data.launch_call_of[i];
      if (call >= 0 && data.runtime.start[call] > prev_end) {
        row.host_wait_ns += interval, ++row.host_wait_count;
        if (options.keep_intervals) row.host_wait_intervals_ns.push_back(interval);
      } else if (interval < options.consecutive_kernel_delay_ns) {
        row.kernel_wait_ns += interval, ++row.kernel_wait_count;
        if (options.keep_intervals) row.kernel_wait_intervals_ns.push_back(interval);
      } else {
        row.other_ns += interval, ++row.other_count;
        if (options.keep_intervals) row.other_intervals_ns.push_back(interval);
      }
    }
    out.push_back(row);
  }
  return out;
}

int64_t quantile(std::vector<int64_t> values, double q) {
  if (values.empty()) return 0;
  q = std::clamp(q, 0.0, 1.0);
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  size_t index = rank == 0 ? 0 : rank - 1;
  std::nth_element(values.begin(), values.begin() + static_cast<long>(index), values.end());
  return values[index];
}

LaunchStatistics launch_statistics(const CaptureData& data,
                                   const LaunchStatisticsOptions& options) {
  std::unordered_set<int64_t> api_ids;
  auto add_api = [&](const std::string& api) {
    for (const auto& [id, text] : data.names)
      if (text == api) api_ids.insert(id);
  };
  for (const auto& api : options.launch_apis) add_api(api);
  if (options.include_memory_events)
    for (const auto& api : options.memory_apis) add_api(api);

  const HtaStepFilter filter = HtaStepFilter::for_capture(data, options.hta_last_step_filter);
  LaunchStatistics stats;
  stats.launches.reserve(data.gpu.size());
  std::vector<int64_t> delays;
  delays.reserve(data.gpu.size());
  // Whether each runtime call's API is a launch API, decided once per distinct name.
  std::unordered_map<int64_t, bool> is_launch_api;
  for (int64_t id : api_ids) is_launch_api[id] = true;
  const auto& g = data.gpu;
  const auto& r = data.runtime;
  for (uint32_t i = 0; i < g.size(); ++i) {
    const int64_t call = data.launch_call_of[i];
    if (call < 0 || !filter.keeps_gpu_event(data, i)) continue;
    if (auto it = is_launch_api.find(r.name_id[call]); it == is_launch_api.end() || !it->second)
      continue;
    LaunchRecord rec;
    rec.correlation = g.correlation[i];
    rec.gpu_index = i;
    rec.runtime_index = static_cast<uint32_t>(call);
    rec.device = g.device[i];
    rec.stream = g.stream[i];
    rec.cpu_start = r.start[call];
    rec.cpu_duration_ns = r.end[call] - r.start[call];
    rec.gpu_start = g.start[i];
    rec.gpu_duration_ns = g.duration(i);
    if (rec.cpu_duration_ns <= options.runtime_cutoff_ns &&
        rec.gpu_duration_ns < rec.cpu_duration_ns) {
      ++stats.short_kernels;
      stats.short_kernel_gpu_ns += rec.gpu_duration_ns;
      stats.short_kernel_cpu_ns += rec.cpu_duration_ns;
    }
    if (rec.cpu_duration_ns > options.runtime_cutoff_ns) ++stats.runtime_outliers;
    const int64_t delay = rec.launch_delay_ns();
    if (delay > options.launch_delay_cutoff_ns) {
      ++stats.launch_delay_outliers;
      stats.launch_delay_excess_ns += delay - options.launch_delay_cutoff_ns;
    }
    delays.push_back(delay);
    stats.launches.push_back(rec);
  }
  if (!delays.empty()) {
    stats.launch_delay_p50_ns = quantile(delays, 0.50);
    stats.launch_delay_p95_ns = quantile(delays, 0.95);
    stats.launch_delay_max_ns = *std::max_element(delays.begin(), delays.end());
    double clipped_sum = 0;
    for (int64_t d : delays) clipped_sum += static_cast<double>(std::max<int64_t>(0, d));
    stats.launch_delay_mean_ns = clipped_sum / static_cast<double>(delays.size());
  }
  return stats;
}

std::vector<KernelSummary> kernel_summary(const CaptureData& data, size_t limit) {
  std::unordered_map<int64_t, KernelSummary> by_name;
  const auto& g = data.gpu;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g.kind[i] != GpuEventKind::kernel) continue;
    const int64_t d = g.duration(i);
    auto [it, fresh] = by_name.try_emplace(g.name_id[i]);
    KernelSummary& s = it->second;
    if (fresh) {
      s.name_id = g.name_id[i];
      s.work_class = g.work_class[i];
      s.min_ns = d, s.max_ns = d;
    }
    ++s.count;
    s.total_ns += d;
    s.min_ns = std::min(s.min_ns, d), s.max_ns = std::max(s.max_ns, d);
  }
  std::vector<KernelSummary> out;
  out.reserve(by_name.size());
  for (auto& [id, s] : by_name) out.push_back(std::move(s));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name_id < b.name_id;
  });
  if (limit && out.size() > limit) out.resize(limit);
  for (auto& s : out) s.name = data.name(s.name_id);
  return out;
}

StepStats step_stats(const std::vector<int64_t>& durations) {
  StepStats s;
  if (durations.empty()) return s;
  s.count = static_cast<int64_t>(durations.size());
  int64_t sum = 0;
  s.min_ns = durations.front();
  for (int64_t d : durations)
    sum += d, s.max_ns = std::max(s.max_ns, d), s.min_ns = std::min(s.min_ns, d);
  s.mean_ns = sum / s.count;
  const double mean = double(sum) / double(s.count);
  double squares = 0;
  for (int64_t d : durations) squares += (double(d) - mean) * (double(d) - mean);
  s.std_ns = s.count > 1 ? std::sqrt(squares / double(s.count - 1)) : 0.0;
  s.jitter = mean > 0 ? s.std_ns / mean : 0.0;
  s.median_ns = quantile(durations, 0.5);
  s.p90_ns = quantile(durations, 0.9);
  s.p99_ns = quantile(durations, 0.99);
  return s;
}

StepStats step_stats(const CaptureData& data) {
  std::vector<int64_t> durations;
  for (const store::Iteration* it : counted_steps(data)) durations.push_back(it->end - it->start);
  return step_stats(durations);
}

}  // namespace fleetscope::analyzer
