#include "fleetscope/analyzer/consolidation.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "fleetscope/analyzer/attribution.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/analyzer/metrics.h"
#include "fleetscope/store/table_io.h"

namespace fleetscope::analyzer {

MemoryFootprint memory_footprint(const std::vector<store::MemoryEvent>& events,
                                 const std::vector<Interval>& iterations) {
  MemoryFootprint fp;
  if (events.empty()) return fp;
  // Allocated level after each event.
  std::vector<int64_t> level(events.size());
  const auto& first = events.front();
  int64_t running = first.total_allocated ? *first.total_allocated - first.bytes : 0;
  const int64_t initial = running;
  fp.totals_known = first.total_allocated.has_value();
  for (size_t i = 0; i < events.size(); ++i) {
    running += events[i].bytes;
    level[i] = events[i].total_allocated ? *events[i].total_allocated : running;
    running = level[i];
    fp.peak_bytes = std::max(fp.peak_bytes, level[i]);
    if (events[i].total_reserved)
      fp.reserved_peak_bytes = std::max(fp.reserved_peak_bytes, *events[i].total_reserved);
    if (events[i].bytes > 0) ++fp.allocations, fp.allocated_bytes += events[i].bytes;
  }
  if (fp.reserved_peak_bytes > 0)
    fp.fragmentation = std::max(0.0, 1.0 - double(fp.peak_bytes) / double(fp.reserved_peak_bytes));
  auto level_before = [&](int64_t t) {  // level just before time t
    auto it = std::lower_bound(events.begin(), events.end(), t,
                               [](const store::MemoryEvent& e, int64_t v) { return e.ts < v; });
    return it == events.begin() ? initial : level[static_cast<size_t>(it - events.begin()) - 1];
  };
  if (iterations.empty()) {
    fp.persistent_bytes = level.back();
    fp.ephemeral_peak_bytes = std::max<int64_t>(0, fp.peak_bytes - fp.persistent_bytes);
    return fp;
  }
  std::vector<double> peaks;
  for (const Interval& step : iterations) {
    const int64_t start_level = level_before(step.begin);
    int64_t peak = start_level;
    auto it = std::lower_bound(events.begin(), events.end(), step.begin,
                               [](const store::MemoryEvent& e, int64_t v) { return e.ts < v; });
    for (; it != events.end() && it->ts < step.end; ++it)
      peak = std::max(peak, level[static_cast<size_t>(it - events.begin())]);
    fp.persistent_bytes = std::max(fp.persistent_bytes, start_level);
    fp.ephemeral_peak_bytes = std::max(fp.ephemeral_peak_bytes, peak - start_level);
    peaks.push_back(double(peak - start_level));
  }
  if (peaks.size() >= 2) {
    double mean = 0, var = 0;
    for (double p : peaks) mean += p;
    mean /= double(peaks.size());
    for (double p : peaks) var += (p - mean) * (p - mean);
    fp.ephemeral_peak_stddev_bytes = std::sqrt(var / double(peaks.size()));
  }
  return fp;
}

namespace {

std::map<std::string, std::string> flatten_labels(const std::string& labels_json) {
  std::map<std::string, std::string> out;
  auto parsed = nlohmann::json::parse(labels_json, nullptr, false);
  if (!parsed.is_object()) return out;
  for (auto it = parsed.begin(); it != parsed.end(); ++it)
    out[it.key()] = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
  return out;
}

}  // namespace

std::string job_name(const ConsolidationCandidate& candidate) {
  return candidate.workflow.empty() ? "capture" + std::to_string(candidate.capture_id)
                                    : candidate.workflow;
}

std::vector<ConsolidationCandidate> consolidation_candidates(const CaptureData& data,
                                                             const ConsolidationOptions& options) {
  std::vector<ConsolidationCandidate> out;
  const std::vector<const store::Iteration*> counted = counted_steps(data);
  for (const auto& [key, members] : events_by_workflow_device(data)) {
    const auto [workflow_id, device] = key;
    ConsolidationCandidate c;
    c.capture_id = data.capture.id;
    c.workflow_id = workflow_id;
    WorkflowInfo info = workflow_info(data, workflow_id);
    c.workflow = info.name;
    c.user = info.user;
    c.labels_json = info.labels_json;
    c.labels = flatten_labels(info.labels_json);
    c.device = device;
    for (const auto& g : data.gpus)
      if (g.id == device) {
        c.gpu_name = g.name;
        c.gpu_memory_bytes = g.totalMemory.value_or(0);
        c.gpu_uuid = g.uuid.value_or("");
      }

    // The job's iterations: those of its processes (or unattributed ones). Its step time counts
    // the steps HTA counts (counted_steps(), metrics.h: not a process's last ProfilerStep, which
    // the capture's end cuts short); its memory peaks are read in every recorded iteration.
    std::vector<Interval> steps;
    std::vector<int64_t> step_ns;
    for (const auto& it : data.iterations)
      if (!it.globalPid || workflow_of_process(data, *it.globalPid) == workflow_id)
        steps.push_back({it.start, it.end});
    for (const store::Iteration* it : counted)
      if (!it->globalPid || workflow_of_process(data, *it->globalPid) == workflow_id)
        step_ns.push_back(it->end - it->start);
    c.iterations = static_cast<int64_t>(step_ns.size());
    c.iteration_ns = quantile(step_ns, 0.5);
    c.iteration_p99_ns = quantile(step_ns, 0.99);

    // The job's GPU utilization (gpu_utilization.h: its steps' span, else its work's span).
    const GpuUtilization u = job_gpu_utilization(data, workflow_id, device, members);
    c.window_ns = u.window.length();
    c.busy_ns = u.busy_ns;
    c.utilization = u.utilization();

    std::vector<store::MemoryEvent> memory;
    for (const auto& e : data.memory)
      if (e.deviceId == device &&
          (!e.globalPid || workflow_of_process(data, *e.globalPid) == workflow_id))
        memory.push_back(e);
    c.memory_measured = !memory.empty();
    MemoryFootprint fp = memory_footprint(memory, steps);
    c.persistent_bytes = fp.persistent_bytes;
    c.ephemeral_peak_bytes = fp.ephemeral_peak_bytes;
    c.ephemeral_peak_stddev_bytes = fp.ephemeral_peak_stddev_bytes;
    c.reserved_peak_bytes = fp.reserved_peak_bytes;
    c.memory_totals_known = !c.memory_measured || fp.totals_known;
    if (c.memory_measured) {
      c.memory_evidence = "trace";
      c.memory_evidence_detail =
          std::to_string(memory.size()) + " memory events in the window" +
          (fp.totals_known ? ""
                           : " (no allocator totals: P counts only what the window allocated)");
    }
    decide_candidate(c, options);
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

std::vector<ConsolidationCandidate> with_nvml(
    std::vector<ConsolidationCandidate> candidates,
    const std::map<std::pair<int64_t, int32_t>, NvmlMemory>& nvml,
    const ConsolidationOptions& options) {
  for (auto& c : candidates)
    if (auto it = nvml.find({c.workflow_id, c.device}); it != nvml.end())
      apply_nvml_memory(c, it->second, options);
  return candidates;
}

}  // namespace

std::vector<ConsolidationCandidate> consolidation_candidates(const CaptureData& data,
                                                             const store::Reader& reader,
                                                             const ConsolidationOptions& options) {
  return with_nvml(consolidation_candidates(data, options), nvml_memory(reader), options);
}

std::vector<ConsolidationCandidate> consolidation_candidates(const store::Reader& reader,
                                                             const ConsolidationOptions& options) {
  std::vector<ConsolidationCandidate> out;
  const auto nvml = nvml_memory(reader);
  for (const auto& capture : reader.captures()) {
    auto part = with_nvml(consolidation_candidates(load_capture(reader, capture.id), options), nvml,
                          options);
    out.insert(out.end(), std::make_move_iterator(part.begin()),
               std::make_move_iterator(part.end()));
  }
  return out;
}

void decide_candidate(ConsolidationCandidate& c, const ConsolidationOptions& options) {
  c.co_location_candidate = false;
  if (c.utilization >= options.max_utilization) {
    c.reason = "GPU utilization " + std::to_string(int(c.utilization * 100)) + " %";
  } else if (!c.memory_measured) {
    c.reason = "no memory events and no NVML figure: P and T unknown";
  } else if (c.gpu_memory_bytes > 0 && c.footprint_bytes() > c.gpu_memory_bytes) {
    c.reason = c.footprint_bytes() > c.persistent_bytes + c.ephemeral_peak_bytes
                   ? "the allocator's reserved peak exceeds the GPU's memory"
                   : "P + T exceed the GPU's memory";
  } else {
    c.co_location_candidate = true;
    c.reason = c.memory_evidence == "nvml" ? "low utilization; P + T from fleetscoped's NVML figure"
               : c.memory_totals_known
                   ? "low utilization; P + T measured"
                   : "low utilization; P + T measured from the capture's own allocations (no "
                     "allocator totals: P is a lower bound)";
  }
}

std::map<std::pair<int64_t, int32_t>, NvmlMemory> nvml_memory(const store::Reader& reader) {
  std::map<std::pair<int64_t, int32_t>, NvmlMemory> out;
  // workflow_metrics is the daemon's table: a trace database without it has no NVML figures.
  auto exists = reader.database().prepare(
      "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'workflow_metrics'");
  if (!exists.step() || exists.column_int(0) == 0) return out;
  // Per workflow and device: the row of the largest peak, read as the table's row (its columns as
  // schema/tables.py describes them, store/table_io.h), and how many windows. With one max() in
  // the query SQLite answers the other columns from the row that holds the maximum
  // (sqlite.org/lang_select.html, "Bare columns in an aggregate query"). A device beyond int32 is
  // not one (the row struct's deviceId).
  using Io = store::io::TableIo<store::WorkflowMetric>;
  auto st = reader.database().prepare(
      std::string("SELECT ") + Io::select_columns + ", max(value), count(*) FROM " + Io::table +
      " WHERE metric = 'memory_peak_bytes' AND value > 0 AND deviceId BETWEEN -2147483648 AND "
      "2147483647 GROUP BY workflow_id, deviceId");
  const int windows = st.column_count() - 1;  // count(*), the last column
  while (st.step()) {
    const store::WorkflowMetric peak = Io::read(st);
    if (!std::isfinite(peak.value) || peak.value > 9.0e15) continue;  // beyond any GPU
    out[{peak.workflow_id, peak.deviceId}] =
        NvmlMemory{static_cast<int64_t>(peak.value), st.column_int(windows)};
  }
  return out;
}

void apply_nvml_memory(ConsolidationCandidate& c, const NvmlMemory& memory,
                       const ConsolidationOptions& options) {
  // Memory events with allocator totals are better evidence; NVML beats the rest.
  if (c.memory_evidence == "trace" && c.memory_totals_known) return;
  if (memory.peak_bytes <= 0) return;
  const bool trace_t = c.memory_evidence == "trace";
  c.ephemeral_peak_bytes = trace_t ? std::min(c.ephemeral_peak_bytes, memory.peak_bytes) : 0;
  c.persistent_bytes = memory.peak_bytes - c.ephemeral_peak_bytes;
  if (!trace_t) c.ephemeral_peak_stddev_bytes = -1.0;
  c.memory_measured = true;
  c.memory_totals_known = true;  // NVML's used memory is the process's absolute figure
  c.memory_source.clear();
  c.memory_evidence = "nvml";
  c.memory_evidence_detail =
      "fleetscoped NVML: peak " + std::to_string(memory.peak_bytes >> 20) + " MiB over " +
      std::to_string(memory.windows) + " metric window(s) as P + T, T " +
      (trace_t ? "from the window's memory events" : "unknown (0: P = the peak)") +
      "; includes the CUDA context";
  c.memory_includes_context = true;
  decide_candidate(c, options);
}

}  // namespace fleetscope::analyzer
