#include "fleetscope/analyzer/step_metrics.h"

#include <algorithm>
#include <array>
#include <set>
#include <string_view>

#include "fleetscope/analyzer/sorted_union.h"

namespace fleetscope::analyzer {

namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// The importer's rule for driver API names (cuLaunchKernel, cuMemcpy...): "cu" but not "cuda".
bool is_runtime_api(std::string_view name) {
  return !(name.size() > 2 && starts_with(name, "cu") && !starts_with(name, "cuda"));
}

// tb_plugin event_parser.py StepParser._parse_step.
bool is_dataloader_op(std::string_view name) {
  return (starts_with(name, "enumerate(DataLoader)#") && name.ends_with(".__next__")) ||
         starts_with(name, "enumerate(DataPipe)#");
}

// tb_plugin trace.py NcclOpNameSet and GlooOpNameSet.
bool is_comm_op(std::string_view name) {
  static constexpr std::array<std::string_view, 5> ops = {"broadcast", "reduce", "all_reduce",
                                                          "all_gather", "reduce_scatter"};
  for (std::string_view lib : {"nccl:", "gloo:"})
    if (starts_with(name, lib)) {
      name.remove_prefix(lib.size());
      return std::find(ops.begin(), ops.end(), name) != ops.end();
    }
  return false;
}

bool is_profiler_step(std::string_view name) {
  return starts_with(name, "ProfilerStep#");
}

}  // namespace

std::optional<Interval> PluginSteps::span() const {
  std::optional<Interval> out;
  for (const auto& s : steps) {
    if (!s.in_overview) continue;
    if (!out) out = s.window;
    out->begin = std::min(out->begin, s.window.begin);
    out->end = std::max(out->end, s.window.end);
  }
  return out;
}

PluginSteps plugin_steps(const CaptureData& data) {
  PluginSteps out;
  for (const auto& it : data.iterations)
    out.steps.push_back({it.step, {it.start, it.end}, {it.start, it.end}, 0, true});
  if (out.steps.empty()) {
    // The plugin's fallback: one step over the host-side ops.
    if (data.cpu_ops.empty()) return out;
    Interval cpu{INT64_MAX, INT64_MIN};
    for (const auto& op : data.cpu_ops)
      cpu.begin = std::min(cpu.begin, op.start), cpu.end = std::max(cpu.end, op.end);
    out.steps.push_back({0, cpu, cpu, 0, true});
    out.from_cpu_ops = true;
  }

  // GPU events per launching runtime call (CUDA runtime API only), runtime calls in start order.
  const auto& r = data.runtime;
  std::vector<uint8_t> runtime_api(r.size(), 0);
  {
    std::unordered_map<int64_t, bool> by_name;
    for (size_t c = 0; c < r.size(); ++c) {
      auto [it, fresh] = by_name.try_emplace(r.name_id[c], false);
      if (fresh) it->second = is_runtime_api(data.name(r.name_id[c]));
      runtime_api[c] = it->second;
    }
  }
  std::vector<std::vector<uint32_t>> launched(r.size());
  for (uint32_t i = 0; i < data.gpu.size(); ++i) {
    const int64_t call = data.launch_call_of[i];
    if (call >= 0 && runtime_api[call]) launched[call].push_back(i);
  }

  // _find_device_steps: a two-way merge of runtime calls and steps.
  auto& steps = out.steps;
  std::vector<Interval> device(steps.size(), Interval{INT64_MAX, INT64_MIN});
  std::vector<uint8_t> matched(data.gpu.size(), 0);
  bool any_matched = false;
  size_t s = 0, c = 0;
  Interval current{INT64_MAX, INT64_MIN};
  auto next_call = [&] {
    while (c < r.size() && !runtime_api[c]) ++c;
  };
  next_call();
  while (s < steps.size() && c < r.size()) {
    const Interval host = steps[s].host;
    if (r.start[c] < host.begin) {
      ++c;
    } else if (r.end[c] <= host.end) {
      for (uint32_t i : launched[c]) {
        current.begin = std::min(current.begin, data.gpu.start[i]);
        current.end = std::max(current.end, data.gpu.end[i]);
        matched[i] = 1, any_matched = true;
        ++steps[s].launched_gpu_events;
      }
      ++c;
    } else if (r.start[c] < host.end) {
      ++c;
    } else {
      device[s++] = current;
      current = {INT64_MAX, INT64_MIN};
    }
    next_call();
  }
  if (s < steps.size()) device[s] = current;  // later steps launched nothing: stay empty
  if (!any_matched) return out;

  // The first step starts no earlier than the GPU work launched before any step had finished.
  int64_t prev_end = steps[0].host.begin;
  if (device[0].begin != INT64_MAX)
    for (uint32_t i = 0; i < data.gpu.size(); ++i)
      if (!matched[i] && data.gpu.end[i] < device[0].begin)
        prev_end = std::max(prev_end, data.gpu.end[i]);

  // _update_steps_duration.
  out.device_adjusted = true;
  for (size_t k = 0; k < steps.size(); ++k) {
    const int64_t start = std::max(prev_end, steps[k].host.begin);
    int64_t end = steps[k].host.end;
    if (device[k].begin == INT64_MAX) {
      end = std::max(end, start);
    } else {
      end = std::max(end, device[k].end);
      if (end < start) end = start;
    }
    steps[k].window = {start, end};
    prev_end = end;
  }
  // Tail-step removal.
  if (steps.size() > 1) {
    ptrdiff_t last = static_cast<ptrdiff_t>(steps.size()) - 1;
    while (last >= 0 && steps[last].launched_gpu_events == 0) --last;
    if (last >= 0) {
      size_t keep = static_cast<size_t>(last) + 1;
      if (last > 0 && double(steps[last - 1].launched_gpu_events) * 0.8 >
                          double(steps[last].launched_gpu_events))
        keep = static_cast<size_t>(last);
      for (size_t k = keep; k < steps.size(); ++k) steps[k].in_overview = false;
    }
  }
  return out;
}

std::vector<StepBreakdown> step_breakdown(const CaptureData& data) {
  return step_breakdown(data, plugin_steps(data));
}

std::vector<StepBreakdown> step_breakdown(const CaptureData& data, const PluginSteps& steps) {
  enum Role { kernel, memcpy, memset, communication, runtime, dataloader, cpu_op, roles };
  std::array<std::vector<Interval>, roles> ranges;
  // The GPU events are united as they are read (start order), not copied: a copy of the kernels
  // of a 10 M-kernel capture is 160 MB or more (sorted_union.h).
  std::array<SortedUnion, roles> gpu_unions;
  const auto& g = data.gpu;
  for (size_t i = 0; i < g.size(); ++i) {
    Role role = g.kind[i] == GpuEventKind::memcpy             ? memcpy
                : g.kind[i] == GpuEventKind::memset           ? memset
                : g.work_class[i] == WorkClass::communication ? communication
                                                              : kernel;
    gpu_unions[role].add({g.start[i], g.end[i]});
  }
  {
    std::unordered_map<int64_t, bool> api;
    for (size_t c = 0; c < data.runtime.size(); ++c) {
      auto [it, fresh] = api.try_emplace(data.runtime.name_id[c], false);
      if (fresh) it->second = is_runtime_api(data.name(data.runtime.name_id[c]));
      if (it->second) ranges[runtime].push_back({data.runtime.start[c], data.runtime.end[c]});
    }
  }
  // cpu_ops holds the DataLoader ops too; dataloader_ops is kept for captures built without
  // cpu_ops. A range in both is united, so counting it twice is harmless.
  for (const auto& op : data.dataloader_ops)
    if (is_dataloader_op(data.name(op.name_id))) ranges[dataloader].push_back({op.start, op.end});
  std::unordered_map<int64_t, Role> cpu_role;  // -1 as "skip" is encoded by `roles`
  for (const auto& op : data.cpu_ops) {
    auto [it, fresh] = cpu_role.try_emplace(op.name_id, cpu_op);
    if (fresh) {
      const std::string& name = data.name(op.name_id);
      it->second = is_profiler_step(name)   ? roles
                   : is_dataloader_op(name) ? dataloader
                   : is_comm_op(name)       ? communication
                                            : cpu_op;
    }
    if (it->second != roles) ranges[it->second].push_back({op.start, op.end});
  }
  std::array<IntervalSet, roles> sets;
  for (int k = 0; k < roles; ++k) {
    IntervalSet gpu = gpu_unions[k].take();
    sets[k] = gpu.empty() ? unite(std::move(ranges[k])) : unite(gpu, unite(std::move(ranges[k])));
  }

  std::vector<StepBreakdown> out;
  for (const auto& step : steps.steps) {
    StepBreakdown row;
    row.step = step.step;
    row.window = step.window;
    row.in_overview = step.in_overview;
    row.step_ns = step.window.length();
    IntervalSet slots = step.window.empty() ? IntervalSet{} : IntervalSet{step.window};
    std::array<int64_t*, roles> cost = {&row.kernel_ns,        &row.memcpy_ns,  &row.memset_ns,
                                        &row.communication_ns, &row.runtime_ns, &row.dataloader_ns,
                                        &row.cpu_op_ns};
    for (int k = 0; k < roles; ++k) {
      const IntervalSet charged = intersect(slots, clip(sets[k], step.window));
      *cost[k] = total_length(charged);
      slots = subtract(slots, charged);
    }
    row.other_ns = total_length(slots);
    out.push_back(row);
  }
  return out;
}

std::vector<DeviceMemory> memory_by_device(const CaptureData& data) {
  std::map<int32_t, std::vector<store::MemoryEvent>> by_device;
  for (const auto& [device, members] : data.events_by_device) by_device[device];
  for (const auto& e : data.memory)
    if (e.deviceId >= 0) by_device[e.deviceId].push_back(e);  // data.memory is in ts order
  std::vector<Interval> steps;
  for (const auto& it : data.iterations) steps.push_back({it.start, it.end});

  std::vector<DeviceMemory> out;
  for (const auto& [device, events] : by_device) {
    DeviceMemory row;
    row.device = device;
    row.events = static_cast<int64_t>(events.size());
    if (!events.empty()) {
      const MemoryFootprint fp = memory_footprint(events, steps);
      row.peak_bytes = fp.peak_bytes;
      row.persistent_bytes = fp.persistent_bytes;
      row.ephemeral_peak_bytes = fp.ephemeral_peak_bytes;
      row.ephemeral_peak_stddev_bytes = fp.ephemeral_peak_stddev_bytes;
      row.baseline_bytes = fp.persistent_bytes;  // no iterations: the level at the end
      row.reserved_peak_bytes = fp.reserved_peak_bytes;
      row.fragmentation = fp.fragmentation;
      row.allocations = fp.allocations, row.allocated_bytes = fp.allocated_bytes;
      row.totals_known = fp.totals_known;
      // One iteration at a time through the same function: its P is the level at the
      // iteration's start, its T the rise above it.
      for (size_t k = 0; k < steps.size(); ++k) {
        const MemoryFootprint one = memory_footprint(events, {steps[k]});
        IterationMemory m;
        m.step = data.iterations[k].step;
        m.window = steps[k];
        m.baseline_bytes = one.persistent_bytes;
        m.ephemeral_peak_bytes = one.ephemeral_peak_bytes;
        m.peak_bytes = one.persistent_bytes + one.ephemeral_peak_bytes;
        for (const auto& e : events) {
          if (e.ts < steps[k].begin || e.ts >= steps[k].end) continue;
          if (e.total_reserved)
            m.reserved_peak_bytes = std::max(m.reserved_peak_bytes, *e.total_reserved);
          if (e.bytes > 0) ++m.allocations, m.allocated_bytes += e.bytes;
        }
        row.baseline_bytes =
            k == 0 ? m.baseline_bytes : std::min(row.baseline_bytes, m.baseline_bytes);
        row.iterations.push_back(m);
      }
    }
    out.push_back(std::move(row));
  }
  return out;
}

std::optional<DataLoaderShare> dataloader_share(const std::vector<StepBreakdown>& steps) {
  DataLoaderShare out;
  for (const StepBreakdown& s : steps) {
    if (!s.in_overview) continue;
    ++out.steps;
    out.step_ns += s.step_ns;
    out.dataloader_ns += s.dataloader_ns;
  }
  if (out.steps == 0) return std::nullopt;
  return out;
}

}  // namespace fleetscope::analyzer
