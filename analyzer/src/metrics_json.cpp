#include "fleetscope/analyzer/metrics_json.h"
#include "fleetscope/analyzer/queue_length.h"

#include <map>

#include <map>
#include <nlohmann/json.hpp>

#include "fleetscope/analyzer/device_metrics.h"
#include "fleetscope/analyzer/metrics.h"
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

    put(d, "gpu_utilization_steps", m.gpu_utilization_steps, m.gpu_utilization_steps_needs);
    d["kernel_busy_in_steps_ns"] = m.kernel_busy_in_steps_ns;
    const GpuUtilization& u = all_ops.at(m.device);
    d["gpu_utilization_all_ops"] = u.utilization();
    d["gpu_utilization_all_ops_window_ns"] = interval_json(u.window);
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

json streams_json(const CaptureData& data) {
  const IdleTimeOptions options;
  json streams = json::array();
  std::map<std::pair<int32_t, int32_t>, QueueLengthSummary> queues;
  for (const auto& q : queue_length_summary(data)) queues[{q.device, q.stream}] = q;
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
    put(row, "queue_length", queue_json(s.device, s.stream),
        "launch calls correlated with GPU work on this stream (HTA's launch API names)");
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
    put(d, "persistent_bytes", value(m.persistent_bytes), needs);
    put(d, "ephemeral_peak_bytes", value(m.ephemeral_peak_bytes), needs);
    put(d, "ephemeral_peak_stddev_bytes",
        m.ephemeral_peak_stddev_bytes >= 0 ? std::optional(m.ephemeral_peak_stddev_bytes)
                                           : std::nullopt,
        measured ? "two or more recorded iterations" : needs);
    out[std::to_string(m.device)] = std::move(d);
  }
  return out;
}

}  // namespace

json metrics_json(const CaptureData& data) {
  const PluginSteps steps = plugin_steps(data);
  const std::vector<DeviceMemory> memory = memory_by_device(data);
  json out;
  out["capture"] = capture_json(data, steps);
  out["devices"] = devices_json(data);
  out["streams"] = streams_json(data);
  out["iterations"] = iterations_json(steps, step_breakdown(data, steps), memory);
  out["launches"] = launches_json(data);
  out["memory"] = memory_json(memory);
  return out;
}

}  // namespace fleetscope::analyzer
