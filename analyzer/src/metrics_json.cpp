#include "fleetscope/analyzer/metrics_json.h"

#include <map>
#include <nlohmann/json.hpp>

#include "fleetscope/analyzer/aten_op_delay.h"
#include "fleetscope/analyzer/critical_path.h"
#include "fleetscope/analyzer/describe.h"
#include "fleetscope/analyzer/device_metrics.h"
#include "fleetscope/analyzer/kernel_annotations.h"
#include "fleetscope/analyzer/kernel_stats.h"
#include "fleetscope/analyzer/memory_bandwidth.h"
#include "fleetscope/analyzer/metrics.h"
#include "fleetscope/analyzer/op_tables.h"
#include "fleetscope/analyzer/queue_length.h"
#include "fleetscope/analyzer/step_metrics.h"

namespace fleetscope::analyzer {

namespace {

using nlohmann::json;

// Sets `name` to the value, or to null with "<name>_needs" when there is none.
template <class T>
void put(json& out, const std::string& name, const std::optional<T>& value,
         const std::string& needs) {
  if (value) {
    out[name] = *value;
  } else {
    out[name] = nullptr;
    out[name + "_needs"] = needs;
  }
}

json interval_json(const std::optional<Interval>& iv) {
  if (!iv) return nullptr;
  return json::array({iv->begin, iv->end});
}

json capture_json(const CaptureData& data, const PluginSteps& steps) {
  json c;
  c["id"] = data.capture.id;
  c["source"] = data.capture.source;
  put(c, "start_ns", data.capture.start_ns, "captures.start_ns (the capture window)");
  put(c, "end_ns", data.capture.end_ns, "captures.end_ns (the capture window)");
  c["gpu_events"] = data.gpu.size();
  c["recorded_iterations"] = data.iterations.size();
  const std::string no_steps = "ProfilerStep iterations or CPU ops";
  put(c, "steps_source",
      steps.steps.empty()
          ? std::nullopt
          : std::optional<std::string>(steps.from_cpu_ops ? "cpu_ops" : "iterations"),
      no_steps);
  c["steps_device_adjusted"] = steps.device_adjusted;
  put(c, "steps_span_ns", steps.span() ? std::optional(interval_json(steps.span())) : std::nullopt,
      no_steps);
  c["hta_last_step_filter"] = HtaStepFilter::for_capture(data).active;
  return c;
}

json devices_json(const CaptureData& data) {
  std::map<int32_t, TemporalBreakdown> temporal;
  for (const auto& t : temporal_breakdown(data)) temporal[t.device] = t;
  std::map<int32_t, GpuUtilization> all_ops;
  for (const auto& u : gpu_utilization(data)) all_ops[u.device] = u;

  json devices = json::object();
  for (const DeviceMetrics& m : device_metrics(data)) {
    json d;
    d["span_ns"] = m.span_ns;
    d["gpu_busy_kernels_ns"] = m.busy_kernels_ns;
    d["gpu_busy_all_ns"] = m.busy_all_ns;
    d["gpu_idle_ns"] = m.idle_ns;

    const std::string hta_needs = "GPU events launched before the last ProfilerStep (HTA filter)";
    auto t = temporal.find(m.device);
    auto opt = [&](auto field) {
      return t == temporal.end() ? std::nullopt : std::optional(field(t->second));
    };
    put(d, "temporal_span_ns", opt([](const auto& r) { return r.span_ns; }), hta_needs);
    put(d, "temporal_compute_ns", opt([](const auto& r) { return r.compute_ns; }), hta_needs);
    put(d, "temporal_non_compute_ns", opt([](const auto& r) { return r.non_compute_ns; }),
        hta_needs);
    put(d, "temporal_idle_ns", opt([](const auto& r) { return r.idle_ns; }), hta_needs);
    put(d, "temporal_compute_fraction", opt([](const auto& r) { return r.compute_fraction(); }),
        hta_needs);
    put(d, "temporal_non_compute_fraction",
        opt([](const auto& r) { return r.non_compute_fraction(); }), hta_needs);
    put(d, "temporal_idle_fraction", opt([](const auto& r) { return r.idle_fraction(); }),
        hta_needs);

    put(d, "kernel_utilization_steps", m.kernel_utilization_steps,
        m.kernel_utilization_steps_needs);
    d["kernel_busy_in_steps_ns"] = m.kernel_busy_in_steps_ns;
    const GpuUtilization& u = all_ops.at(m.device);
    d["gpu_utilization"] = u.utilization();
    d["gpu_utilization_window_ns"] = interval_json(u.window);
    d["gpu_utilization_window_is_steps"] = u.window_is_steps;
    put(d, "est_sm_efficiency", m.est_sm_efficiency, m.est_sm_efficiency_needs);
    put(d, "est_achieved_occupancy", m.est_achieved_occupancy, m.est_achieved_occupancy_needs);

    auto by_type = [](const KernelTimeByType& k) {
      return json{{"compute", k.computation_ns},
                  {"communication", k.communication_ns},
                  {"memory", k.memory_ns},
                  {"other", k.other_ns}};
    };
    d["kernel_time_by_type_ns"] = by_type(m.kernel_time_by_type);
    d["kernel_time_by_type_unfiltered_ns"] = by_type(m.kernel_time_by_type_unfiltered);
    d["kernel_type_states_ns"] = m.kernel_type_states;
    put(d, "comm_comp_overlap", m.comm_comp_overlap.ratio(),
        "communication (NCCL) kernels on device " + std::to_string(m.device));
    d["comm_ns"] = m.comm_comp_overlap.communication_ns;
    d["comm_comp_overlap_ns"] = m.comm_comp_overlap.overlap_ns;
    devices[std::to_string(m.device)] = std::move(d);
  }
  return devices;
}

json describe_json(const Describe& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"std", d.std}, {"min", d.min},
          {"p25", d.p25},     {"p50", d.p50},   {"p75", d.p75}, {"max", d.max}};
}

json streams_json(const CaptureData& data, const std::vector<QueueLengthSeries>& series) {
  const IdleTimeOptions options;
  json streams = json::array();
  std::map<std::pair<int32_t, int32_t>, QueueLengthSummary> queues;
  for (const auto& s : series) queues[{s.device, s.stream}] = summarize(s);
  std::map<std::pair<int32_t, int32_t>, int64_t> blocked;
  for (const auto& b : time_blocked_on_full_queue(series))
    blocked[{b.device, b.stream}] = b.blocked_ns;
  auto queue_json = [&](int32_t device, int32_t stream) -> std::optional<json> {
    auto it = queues.find({device, stream});
    if (it == queues.end()) return std::nullopt;
    const QueueLengthSummary& q = it->second;
    json out = {{"points", q.count}, {"mean", q.mean}, {"std", q.std}, {"min", q.min},
                {"p25", q.p25},      {"p50", q.p50},   {"p75", q.p75}, {"max", q.max}};
    put(out, "time_weighted_mean", q.time_weighted_mean, "queue changes at two or more times");
    return out;
  };
  for (const auto& s : idle_time_breakdown(data, options)) {
    json row = {{"device", s.device},
                {"stream", s.stream},
                {"idle_host_wait_ns", s.host_wait_ns},
                {"idle_kernel_wait_ns", s.kernel_wait_ns},
                {"idle_other_ns", s.other_ns},
                {"idle_host_wait_count", s.host_wait_count},
                {"idle_kernel_wait_count", s.kernel_wait_count},
                {"idle_other_count", s.other_count},
                {"consecutive_kernel_delay_ns", options.consecutive_kernel_delay_ns}};
    const std::string queue_needs =
        "launch calls correlated with GPU work on this stream (HTA's launch API names)";
    put(row, "queue_length", queue_json(s.device, s.stream), queue_needs);
    const bool has_queue = queues.count({s.device, s.stream}) > 0;
    const auto full = blocked.find({s.device, s.stream});
    put(row, "blocked_on_full_queue_ns",
        has_queue ? std::optional<int64_t>(full == blocked.end() ? 0 : full->second) : std::nullopt,
        queue_needs);
    streams.push_back(std::move(row));
  }
  return streams;
}

json iterations_json(const PluginSteps& steps, const std::vector<StepBreakdown>& rows,
                     const std::vector<DeviceMemory>& memory) {
  json out = json::array();
  for (size_t k = 0; k < rows.size(); ++k) {
    const StepBreakdown& b = rows[k];
    const PluginStep& s = steps.steps[k];
    json it = {{"step", b.step},
               {"host_start_ns", s.host.begin},
               {"host_end_ns", s.host.end},
               {"start_ns", b.window.begin},
               {"end_ns", b.window.end},
               {"in_overview", b.in_overview},
               {"step_time_ns", b.step_ns},
               {"kernel_ns", b.kernel_ns},
               {"memcpy_ns", b.memcpy_ns},
               {"memset_ns", b.memset_ns},
               {"communication_ns", b.communication_ns},
               {"runtime_ns", b.runtime_ns},
               {"dataloader_ns", b.dataloader_ns},
               {"cpu_op_ns", b.cpu_op_ns},
               {"other_ns", b.other_ns}};
    json per_device = json::object();
    for (const DeviceMemory& m : memory) {
      json d;
      // Recorded iterations line up with the memory rows; the CPU-op fallback step has none.
      const IterationMemory* im =
          !steps.from_cpu_ops && k < m.iterations.size() ? &m.iterations[k] : nullptr;
      const std::string needs = m.events == 0
                                    ? "memory events for device " + std::to_string(m.device) +
                                          " (PyTorch profiler profile_memory=True)"
                                    : "recorded iterations";
      auto field = [&](int64_t IterationMemory::*member) {
        return im ? std::optional<int64_t>(im->*member) : std::nullopt;
      };
      put(d, "baseline_bytes", field(&IterationMemory::baseline_bytes), needs);
      put(d, "peak_bytes", field(&IterationMemory::peak_bytes), needs);
      put(d, "ephemeral_peak_bytes", field(&IterationMemory::ephemeral_peak_bytes), needs);
      put(d, "allocations", field(&IterationMemory::allocations), needs);
      put(d, "allocated_bytes", field(&IterationMemory::allocated_bytes), needs);
      put(d, "reserved_peak_bytes",
          im && im->reserved_peak_bytes > 0 ? std::optional(im->reserved_peak_bytes) : std::nullopt,
          "total_reserved on the memory events (PyTorch's caching allocator)");
      per_device[std::to_string(m.device)] = std::move(d);
    }
    it["memory"] = std::move(per_device);
    out.push_back(std::move(it));
  }
  return out;
}

json launches_json(const CaptureData& data) {
  const LaunchStatisticsOptions options;
  const LaunchStatistics s = launch_statistics(data, options);
  json l = {{"launches", s.launches.size()},
            {"short_kernels", s.short_kernels},
            {"short_kernel_gpu_ns", s.short_kernel_gpu_ns},
            {"short_kernel_cpu_ns", s.short_kernel_cpu_ns},
            {"runtime_outliers", s.runtime_outliers},
            {"launch_delay_outliers", s.launch_delay_outliers},
            {"launch_delay_excess_ns", s.launch_delay_excess_ns},
            {"runtime_cutoff_ns", options.runtime_cutoff_ns},
            {"launch_delay_cutoff_ns", options.launch_delay_cutoff_ns}};
  const bool any = !s.launches.empty();
  const std::string needs = "CUDA launch calls correlated with GPU events";
  auto value = [&](int64_t v) { return any ? std::optional<int64_t>(v) : std::nullopt; };
  put(l, "launch_delay_p50_ns", value(s.launch_delay_p50_ns), needs);
  put(l, "launch_delay_p95_ns", value(s.launch_delay_p95_ns), needs);
  put(l, "launch_delay_max_ns", value(s.launch_delay_max_ns), needs);
  put(l, "launch_delay_mean_ns", any ? std::optional<double>(s.launch_delay_mean_ns) : std::nullopt,
      needs);
  return l;
}

json memory_json(const std::vector<DeviceMemory>& memory) {
  json out = json::object();
  for (const DeviceMemory& m : memory) {
    json d;
    d["memory_events"] = m.events;
    const bool measured = m.events > 0;
    const std::string needs = "memory events for device " + std::to_string(m.device) +
                              " (PyTorch profiler profile_memory=True)";
    auto value = [&](int64_t v) { return measured ? std::optional<int64_t>(v) : std::nullopt; };
    put(d, "peak_bytes", value(m.peak_bytes), needs);
    put(d, "baseline_bytes", value(m.baseline_bytes), needs);
    // Without allocator totals the level before the capture is unknown: P is null (its lower
    // bound stays in persistent_bytes_at_least) rather than a misleading 0.
    const std::string totals_needs =
        "allocator totals on the memory events (PyTorch's \"Total Allocated\"); memory "
        "allocated before the capture is not seen";
    d["memory_totals_known"] = !measured || m.totals_known;
    if (measured && !m.totals_known) {
      put(d, "persistent_bytes", std::optional<int64_t>(), totals_needs);
      d["persistent_bytes_at_least"] = m.persistent_bytes;
    } else {
      put(d, "persistent_bytes", value(m.persistent_bytes), needs);
    }
    put(d, "ephemeral_peak_bytes", value(m.ephemeral_peak_bytes), needs);
    put(d, "ephemeral_peak_stddev_bytes",
        m.ephemeral_peak_stddev_bytes >= 0 ? std::optional(m.ephemeral_peak_stddev_bytes)
                                           : std::nullopt,
        measured ? "two or more recorded iterations" : needs);
    put(d, "allocations", value(m.allocations), needs);
    put(d, "allocated_bytes", value(m.allocated_bytes), needs);
    const std::string reserved_needs =
        "total_reserved on the memory events (PyTorch's caching allocator)";
    put(d, "reserved_peak_bytes",
        m.reserved_peak_bytes > 0 ? std::optional(m.reserved_peak_bytes) : std::nullopt,
        reserved_needs);
    put(d, "fragmentation",
        m.reserved_peak_bytes > 0 ? std::optional(m.fragmentation) : std::nullopt, reserved_needs);
    out[std::to_string(m.device)] = std::move(d);
  }
  return out;
}

// HTA get_idle_time_breakdown(show_idle_interval_stats=True): describe() of the idle intervals
// per stream and category (ns).
json idle_interval_stats_json(const CaptureData& data) {
  IdleTimeOptions options;
  options.keep_intervals = true;
  json out = json::array();
  for (const auto& s : idle_time_breakdown(data, options)) {
    const std::pair<const char*, const std::vector<int64_t>*> categories[] = {
        {"host_wait", &s.host_wait_intervals_ns},
        {"kernel_wait", &s.kernel_wait_intervals_ns},
        {"other", &s.other_intervals_ns}};
    for (const auto& [category, intervals] : categories) {
      if (intervals->empty()) continue;
      json row = describe_json(describe(std::vector<double>(intervals->begin(), intervals->end())));
      row["device"] = s.device, row["stream"] = s.stream, row["category"] = category;
      out.push_back(std::move(row));
    }
  }
  return out;
}

json memory_bandwidth_json(const CaptureData& data) {
  json out = json::array();
  for (const auto& m : memory_bandwidth_summary(data))
    out.push_back({{"device", m.device},
                   {"copy_kind", m.copy_kind},
                   {"count", m.count},
                   {"bytes", m.bytes},
                   {"busy_ns", m.busy_ns},
                   {"gbps", describe_json(m.gbps)}});
  return out;
}

// One kernel_stats / gpu_user_annotation_stats row, as both keys print it.
json kernel_stat_json(const KernelStat& k) {
  return {{"name", k.name},     {"count", k.count},     {"sum_ns", k.sum_ns}, {"max_ns", k.max_ns},
          {"min_ns", k.min_ns}, {"mean_ns", k.mean_ns}, {"std_ns", k.std_ns}};
}

json kernel_stats_json(const CaptureData& data, size_t top) {
  KernelStatsOptions options;
  options.top = top;
  json out = json::array();
  for (const auto& t : kernel_stats(data, options)) {
    json kernels = json::array();
    for (const auto& k : t.top) kernels.push_back(kernel_stat_json(k));
    out.push_back({{"device", t.device},
                   {"kernel_type", t.kernel_type},
                   {"top", std::move(kernels)},
                   {"others_kernels", t.others_kernels},
                   {"others_sum_ns", t.others_sum_ns}});
  }
  return out;
}

json step_time_json(const CaptureData& data) {
  const StepStats s = step_stats(data);
  json out = {{"count", s.count}};
  const bool any = s.count > 0;
  const std::string needs = "recorded iterations (ProfilerStep#N)";
  auto value = [&](int64_t v) { return any ? std::optional<int64_t>(v) : std::nullopt; };
  put(out, "p50_ns", value(s.median_ns), needs);
  put(out, "p90_ns", value(s.p90_ns), needs);
  put(out, "p99_ns", value(s.p99_ns), needs);
  put(out, "mean_ns", value(s.mean_ns), needs);
  put(out, "min_ns", value(s.min_ns), needs);
  put(out, "max_ns", value(s.max_ns), needs);
  put(out, "std_ns", any ? std::optional<double>(s.std_ns) : std::nullopt, needs);
  put(out, "jitter", any ? std::optional<double>(s.jitter) : std::nullopt, needs);
  return out;
}

// The profiler plugin's operator view (grouped by name) and kernel view (by kernel and op).
// HTA get_aten_op_kernels_and_delay (aten_op_delay.h): the `top` (op, kernel sequence) pairs by
// count.
json aten_op_kernels_json(const CaptureData& data, size_t top) {
  json out = json::array();
  for (const AtenOpKernels& row : aten_op_kernels_and_delay(data)) {
    if (out.size() >= top) break;
    out.push_back({{"op", row.op},
                   {"kernels", row.kernels},
                   {"count", row.count},
                   {"avg_aten_op_launch_delay_ns", row.avg_aten_op_launch_delay_ns},
                   {"avg_runtime_delay_ns", row.avg_runtime_delay_ns}});
  }
  return out;
}

// HTA get_gpu_user_annotation_breakdown (kernel_stats.h): per gpu_user_annotation name.
json gpu_user_annotation_stats_json(const CaptureData& data) {
  const AnnotationStats stats = gpu_user_annotation_stats(data);
  json top = json::array();
  for (const KernelStat& k : stats.top) top.push_back(kernel_stat_json(k));
  return {{"top", std::move(top)},
          {"others_names", stats.others_names},
          {"others_sum_ns", stats.others_sum_ns}};
}

json operator_table_json(const CaptureData& data, const OpTree& tree, size_t top) {
  json out = json::array();
  for (const OperatorRow& r : operator_table(data, tree)) {
    if (out.size() >= top) break;
    out.push_back({{"name", r.name},
                   {"calls", r.calls},
                   {"host_ns", r.host_ns},
                   {"self_host_ns", r.self_host_ns},
                   {"device_ns", r.device_ns},
                   {"self_device_ns", r.self_device_ns}});
  }
  return out;
}

json kernel_table_json(const CaptureData& data, const OpTree& tree, size_t top) {
  json out = json::array();
  for (const KernelRow& r : kernel_table(data, tree)) {
    if (out.size() >= top) break;
    out.push_back({{"name", r.name},
                   {"op", r.op},
                   {"calls", r.calls},
                   {"sum_ns", r.sum_ns},
                   {"mean_ns", r.mean_ns},
                   {"max_ns", r.max_ns},
                   {"min_ns", r.min_ns},
                   {"blocks_per_sm", r.blocks_per_sm},
                   {"est_occupancy", r.est_occupancy}});
  }
  return out;
}

json queue_series_json(const std::vector<QueueLengthSeries>& series) {
  json out = json::array();
  for (const auto& s : series) {
    json points = json::array();
    for (const auto& p : s.points) points.push_back({p.time_ns, p.queue_length});
    out.push_back({{"device", s.device}, {"stream", s.stream}, {"points", std::move(points)}});
  }
  return out;
}

json bandwidth_series_json(const CaptureData& data) {
  json out = json::array();
  for (const auto& s : memory_bandwidth_time_series(data)) {
    json points = json::array();
    for (const auto& p : s.points) points.push_back({p.time_ns, p.gbps});
    out.push_back(
        {{"device", s.device}, {"copy_kind", s.copy_kind}, {"points", std::move(points)}});
  }
  return out;
}

}  // namespace

json metrics_json(const CaptureData& data, const MetricsJsonOptions& options) {
  const PluginSteps steps = plugin_steps(data);
  const std::vector<DeviceMemory> memory = memory_by_device(data);
  const std::vector<QueueLengthSeries> queues = queue_length_time_series(data);
  json out;
  out["capture"] = capture_json(data, steps);
  out["devices"] = devices_json(data);
  out["streams"] = streams_json(data, queues);
  out["step_time"] = step_time_json(data);
  out["idle_interval_stats"] = idle_interval_stats_json(data);
  out["memory_bandwidth"] = memory_bandwidth_json(data);
  out["kernel_stats"] = kernel_stats_json(data, options.top_kernels);
  const OpTree tree = build_op_tree(data);
  out["operator_table"] = operator_table_json(data, tree, options.table_rows);
  out["kernel_table"] = kernel_table_json(data, tree, options.table_rows);
  out["aten_op_kernels"] = aten_op_kernels_json(data, options.table_rows);
  out["gpu_user_annotation_stats"] = gpu_user_annotation_stats_json(data);
  out["gpu_kernels_with_user_annotations"] =
      gpu_kernels_with_user_annotations_json(data, options.series);
  const CriticalPath path = critical_path(data);
  if (path.computed) {
    out["critical_path"] = critical_path_json(path, options.series);
  } else {
    out["critical_path"] = nullptr;
    out["critical_path_needs"] = path.not_computed_reason;
  }
  if (options.series) {
    out["queue_length_time_series"] = queue_series_json(queues);
    out["memory_bandwidth_time_series"] = bandwidth_series_json(data);
  }
  out["iterations"] = iterations_json(steps, step_breakdown(data, steps), memory);
  out["launches"] = launches_json(data);
  out["memory"] = memory_json(memory);
  return out;
}

}  // namespace fleetscope::analyzer
