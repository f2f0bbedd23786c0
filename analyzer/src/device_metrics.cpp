#include "fleetscope/analyzer/device_metrics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "fleetscope/analyzer/metrics.h"
#include "fleetscope/analyzer/sorted_union.h"
#include "fleetscope/analyzer/step_metrics.h"

namespace fleetscope::analyzer {

namespace {

const std::vector<uint32_t>& device_events(const CaptureData& data, int32_t device) {
  static const std::vector<uint32_t> none;
  auto it = data.events_by_device.find(device);
  return it == data.events_by_device.end() ? none : it->second;
}

bool has_blocks(const GpuEvents& g) {
  return g.grid_blocks.size() == g.size();
}

bool has_occupancy(const GpuEvents& g) {
  return g.est_occupancy.size() == g.size();
}

// The union of every HTA GPU row of the device (GPU events, then stream-carrying sync waits) that
// the filter keeps, per HTA kernel type; the type of each name is decided once. United as read
// (sorted_union.h), not copied.
std::array<IntervalSet, 4> intervals_by_hta_type(const CaptureData& data, int32_t device,
                                                 bool hta_last_step_filter) {
  const HtaStepFilter filter = HtaStepFilter::for_capture(data, hta_last_step_filter);
  std::map<int64_t, HtaKernelType> type_of_name;
  auto type_of = [&](int64_t name_id) {
    auto [it, fresh] = type_of_name.try_emplace(name_id, HtaKernelType::other);
    if (fresh) it->second = hta_kernel_type(data.name(name_id));
    return static_cast<size_t>(it->second);
  };
  std::array<SortedUnion, 4> by_type;
  const auto& g = data.gpu;
  for (uint32_t i : device_events(data, device))
    if (filter.keeps_gpu_event(data, i)) by_type[type_of(g.name_id[i])].add({g.start[i], g.end[i]});
  const auto& s = data.gpu_syncs;
  for (size_t i = 0; i < s.size(); ++i)
    if (s.device[i] == device && filter.keeps_gpu_sync(data, i))
      by_type[type_of(s.name_id[i])].add({s.start[i], s.end[i]});
  std::array<IntervalSet, 4> out;
  for (size_t t = 0; t < out.size(); ++t) out[t] = by_type[t].take();
  return out;
}

std::string device_text(int32_t device) {
  return "device " + std::to_string(device);
}

bool starts_with(const std::string& text, const char* prefix) {
  return text.rfind(prefix, 0) == 0;
}

}  // namespace

HtaKernelType hta_kernel_type(const std::string& full_name) {
  // re.match's '.' does not cross a newline, so the ".*X" parts only see the first line.
  const std::string line = full_name.substr(0, full_name.find('\n'));
  const bool nccl_kernel = starts_with(line, "nccl") && line.find("Kernel", 4) != std::string::npos;
  if (nccl_kernel) return HtaKernelType::communication;
  if (starts_with(full_name, "Memcpy") || starts_with(full_name, "Memset") ||
      starts_with(full_name, "dma"))
    return HtaKernelType::memory;
  const bool not_compute = line.find("Memcpy") != std::string::npos ||
                           starts_with(full_name, "Memset") ||
                           line.find("Sync") != std::string::npos;
  return not_compute ? HtaKernelType::other : HtaKernelType::computation;
}

KernelTimeByType kernel_time_by_type(const CaptureData& data, int32_t device,
                                     bool hta_last_step_filter) {
  auto by_type = intervals_by_hta_type(data, device, hta_last_step_filter);
  auto length = [&](HtaKernelType t) { return total_length(by_type[static_cast<size_t>(t)]); };
  KernelTimeByType out;
  out.computation_ns = length(HtaKernelType::computation);
  out.communication_ns = length(HtaKernelType::communication);
  out.memory_ns = length(HtaKernelType::memory);
  out.other_ns = length(HtaKernelType::other);
  return out;
}

std::vector<KernelTypeSegment> kernel_type_segments(const CaptureData& data, int32_t device,
                                                    bool hta_last_step_filter) {
  auto by_type = intervals_by_hta_type(data, device, hta_last_step_filter);
  // HTA's order of the analysed types (bit i = type i) and their names in the state labels.
  const std::array<std::pair<HtaKernelType, const char*>, 3> analysed = {
      {{HtaKernelType::computation, "COMPUTATION"},
       {HtaKernelType::communication, "COMMUNICATION"},
       {HtaKernelType::memory, "MEMORY"}}};
  std::array<std::string, 8> label;
  for (int mask = 1; mask < 8; ++mask)
    for (size_t bit = 0; bit < analysed.size(); ++bit)
      if (mask & (1 << bit))
        label[mask] +=
            (label[mask].empty() ? "" : " overlapping ") + std::string(analysed[bit].second);
  struct Edge {
    int64_t time;
    int delta;  // +bit at a start, -bit at an end
  };
  std::vector<Edge> edges;
  for (size_t bit = 0; bit < analysed.size(); ++bit) {
    const int value = 1 << bit;
    for (const Interval& iv : by_type[static_cast<size_t>(analysed[bit].first)])
      edges.push_back({iv.begin, value}), edges.push_back({iv.end, -value});
  }
  // Ends before starts at one time: the running mask is always a set of distinct type bits.
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    return a.time != b.time ? a.time < b.time : a.delta < b.delta;
  });
  std::vector<KernelTypeSegment> out;
  int running = 0;
  for (size_t k = 0; k + 1 < edges.size(); ++k) {
    running += edges[k].delta;
    if (running > 0 && edges[k + 1].time > edges[k].time)
      out.push_back({label[running], {edges[k].time, edges[k + 1].time}});
  }
  return out;
}

std::map<std::string, int64_t> kernel_type_states(const CaptureData& data, int32_t device,
                                                  bool hta_last_step_filter) {
  std::map<std::string, int64_t> out;
  for (const auto& segment : kernel_type_segments(data, device, hta_last_step_filter))
    out[segment.state] += segment.span.length();
  return out;
}

IntervalSet kernel_busy(const CaptureData& data, int32_t device) {
  SortedUnion kernels;  // united as read, not copied (sorted_union.h)
  for (uint32_t i : device_events(data, device))
    if (data.gpu.kind[i] == GpuEventKind::kernel) kernels.add({data.gpu.start[i], data.gpu.end[i]});
  return kernels.take();
}

std::optional<int32_t> sm_count(const CaptureData& data, int32_t device) {
  for (const auto& g : data.gpus)
    if (g.id == device && g.smCount && *g.smCount > 0) return *g.smCount;
  return std::nullopt;
}

std::vector<CommCompOverlap> comm_comp_overlap(const CaptureData& data, bool hta_last_step_filter) {
  const HtaStepFilter filter = HtaStepFilter::for_capture(data, hta_last_step_filter);
  // United as read (sorted_union.h): the events in start order, then the few sync waits.
  std::map<int32_t, std::pair<SortedUnion, SortedUnion>> by_device;
  auto add = [&](int32_t device, WorkClass c, Interval iv) {
    auto& [comm, comp] = by_device[device];
    if (c == WorkClass::communication) comm.add(iv);
    if (c == WorkClass::computation) comp.add(iv);
  };
  const auto& g = data.gpu;
  for (size_t i = 0; i < g.size(); ++i)
    if (filter.keeps_gpu_event(data, i)) add(g.device[i], g.work_class[i], {g.start[i], g.end[i]});
  // HTA's GPU rows are every row with a stream, so stream-carrying sync waits take part; a
  // "Stream Wait Event" is computation under HTA's name rule.
  const auto& s = data.gpu_syncs;
  for (size_t i = 0; i < s.size(); ++i)
    if (filter.keeps_gpu_sync(data, i)) add(s.device[i], s.work_class[i], {s.start[i], s.end[i]});
  std::vector<CommCompOverlap> out;
  for (auto& [device, lists] : by_device) {
    CommCompOverlap row;
    row.device = device;
    const IntervalSet comm = lists.first.take();
    row.communication_ns = total_length(comm);
    row.overlap_ns = total_length(intersect(comm, lists.second.take()));
    out.push_back(row);
  }
  return out;
}

std::vector<ValueRange> sm_efficiency_ranges(const CaptureData& data, int32_t device) {
  const auto sms = sm_count(data, device);
  const auto& g = data.gpu;
  if (!sms || !has_blocks(g)) return {};
  // Endpoints (time, is_end, value); a start sorts before an end at the same time.
  struct Endpoint {
    int64_t time;
    bool is_end;
    double value;
  };
  std::vector<Endpoint> points;
  for (uint32_t i : device_events(data, device)) {
    if (g.kind[i] != GpuEventKind::kernel || g.grid_blocks[i] <= 0) continue;
    const double blocks_per_sm = double(g.grid_blocks[i]) / double(*sms);
    points.push_back({g.start[i], false, blocks_per_sm});
    points.push_back({g.end[i], true, blocks_per_sm});
  }
  std::stable_sort(points.begin(), points.end(), [](const Endpoint& a, const Endpoint& b) {
    return a.time != b.time ? a.time < b.time : a.is_end < b.is_end;
  });
  std::vector<ValueRange> out;
  if (points.empty()) return out;
  int64_t last_time = points[0].time;
  double running = points[0].value;
  for (size_t k = 1; k < points.size(); ++k) {
    const Endpoint& p = points[k];
    if (p.time > last_time && running > 0.0)
      out.push_back({{last_time, p.time}, std::min(running, 1.0)});
    last_time = p.time;
    running += p.is_end ? -p.value : p.value;
  }
  return out;
}

std::vector<UtilizationBucket> gpu_utilization_timeline(const CaptureData& data, int32_t device,
                                                        Interval range) {
  if (range.empty()) return {};
  return gpu_utilization_timeline(kernel_busy(data, device), range);
}

std::vector<UtilizationBucket> gpu_utilization_timeline(const IntervalSet& busy, Interval range) {
  std::vector<UtilizationBucket> out;
  if (range.empty()) return out;
  // get_bucket_info works in µs.
  const double range_us = double(range.length()) / 1000.0;
  int64_t bucket_us = 1;
  while (range_us / double(bucket_us) > 100.0) bucket_us *= 10;
  const auto buckets = static_cast<int64_t>(range_us / double(bucket_us));
  for (int64_t b = 0; b < buckets; ++b) {
    Interval bucket{range.begin + b * bucket_us * 1000,
                    b + 1 < buckets ? range.begin + (b + 1) * bucket_us * 1000 : range.end};
    out.push_back({bucket, double(covered_length(busy, bucket)) / double(bucket.length())});
  }
  return out;
}

std::vector<DeviceMetrics> device_metrics(const CaptureData& data) {
  const PluginSteps steps = plugin_steps(data);
  const std::optional<Interval> window = steps.span();
  std::map<int32_t, CommCompOverlap> overlap;
  for (const auto& row : comm_comp_overlap(data)) overlap[row.device] = row;

  std::vector<DeviceMetrics> out;
  for (const auto& [device, members] : data.events_by_device) {
    DeviceMetrics m;
    m.device = device;
    m.span = data.device_span(device).value_or(Interval{});
    m.span_ns = m.span.length();
    const IntervalSet kernels = kernel_busy(data, device);
    m.busy_kernels_ns = total_length(kernels);
    m.busy_all_ns = total_length(data.busy_by_device.at(device));
    m.idle_ns = m.span_ns - m.busy_all_ns;
    m.kernel_time_by_type = kernel_time_by_type(data, device);
    m.kernel_time_by_type_unfiltered = kernel_time_by_type(data, device, false);
    m.kernel_type_states = kernel_type_states(data, device);
    if (auto it = overlap.find(device); it != overlap.end()) {
      m.comm_comp_overlap = it->second;
    } else {
      m.comm_comp_overlap.device = device;
    }
    m.steps_span = window;

    const std::string no_steps = "ProfilerStep iterations or CPU ops (the steps span)";
    // GPU utilization over the steps.
    if (!window || window->empty()) {
      m.kernel_utilization_steps_needs = window ? "a non-empty steps span" : no_steps;
    } else {
      m.kernel_busy_in_steps_ns = covered_length(kernels, *window);
      m.kernel_utilization_steps = double(m.kernel_busy_in_steps_ns) / double(window->length());
    }

    // Estimated SM efficiency.
    const auto& g = data.gpu;
    const bool any_shape =
        has_blocks(g) && std::any_of(members.begin(), members.end(), [&](uint32_t i) {
          return g.kind[i] == GpuEventKind::kernel && g.grid_blocks[i] > 0;
        });
    if (!sm_count(data, device)) {
      m.est_sm_efficiency_needs = "TARGET_INFO_GPU.smCount for " + device_text(device);
    } else if (!any_shape) {
      m.est_sm_efficiency_needs =
          "kernel grid dimensions (gridX, gridY, gridZ) on " + device_text(device);
    } else if (!window || window->empty()) {
      m.est_sm_efficiency_needs = window ? "a non-empty steps span" : no_steps;
    } else {
      double weighted = 0;
      bool inside = false;
      for (const ValueRange& r : sm_efficiency_ranges(data, device)) {
        const Interval part{std::max(r.range.begin, window->begin),
                            std::min(r.range.end, window->end)};
        if (part.empty()) continue;
        weighted += r.value * double(part.length());
        inside = true;
      }
      if (inside) {
        m.est_sm_efficiency = weighted / double(window->length());
      } else {
        m.est_sm_efficiency_needs = "kernels with a launch shape inside the steps span";
      }
    }

    // Estimated achieved occupancy (percent).
    const bool any_occupancy =
        has_occupancy(g) && std::any_of(members.begin(), members.end(), [&](uint32_t i) {
          return g.kind[i] == GpuEventKind::kernel && !std::isnan(g.est_occupancy[i]) &&
                 g.est_occupancy[i] >= 0.0;
        });
    if (!any_occupancy) {
      m.est_achieved_occupancy_needs =
          "per-kernel est. achieved occupancy % (Kineto kernel arg, "
          "CUPTI_ACTIVITY_KIND_KERNEL.estOccupancy) on " +
          device_text(device);
    } else if (!window || window->empty()) {
      m.est_achieved_occupancy_needs = window ? "a non-empty steps span" : no_steps;
    } else {
      double weighted = 0, total = 0;
      for (uint32_t i : members) {
        if (g.kind[i] != GpuEventKind::kernel || std::isnan(g.est_occupancy[i]) ||
            g.est_occupancy[i] < 0.0)
          continue;
        const int64_t begin = std::max(g.start[i], window->begin);
        const int64_t end = std::min(g.end[i], window->end);
        if (begin >= end) continue;
        weighted += g.est_occupancy[i] * double(end - begin);
        total += double(end - begin);
      }
      if (total > 0) {
        m.est_achieved_occupancy = weighted / total;
      } else {
        m.est_achieved_occupancy_needs =
            "kernels with est. achieved occupancy inside the steps span";
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace fleetscope::analyzer
