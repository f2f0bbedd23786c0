// The built-in rule catalogue. Defaults cite where they come from; "fleetscope" marks our own
// choices where the reference tools report a metric without a firing threshold.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "fleetscope/analyzer/consolidation.h"
#include "fleetscope/analyzer/device_features.h"
#include "fleetscope/analyzer/kernel_sequences.h"
#include "fleetscope/analyzer/rules.h"
#include "fleetscope/analyzer/sorted_union.h"
#include "fleetscope/analyzer/step_metrics.h"

namespace fleetscope::analyzer {

namespace {

using nlohmann::json;

// Milliseconds in advice text: whole from 10 ms, two decimals down to 10 µs, and four below it,
// so that a few microseconds never read "0.00 ms" (a 1.8 µs kernel is "0.0018 ms").
std::string ms(int64_t ns) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(ns >= 10'000'000 ? 0 : ns >= 10'000 ? 2 : 4);
  s << double(ns) / 1e6 << " ms";
  return s.str();
}

// A count per step as a person writes it: "3", "2.5" (std::to_string gave "3.000000").
std::string per_step_text(double value) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(value == std::floor(value) ? 0 : 1);
  s << value;
  return s.str();
}

std::string percent(double fraction) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(1);
  s << fraction * 100.0 << " %";
  return s.str();
}

json thresholds_json(const Rule& rule, const AnalysisContext& context) {
  json t = json::object();
  for (const Threshold& th : rule.thresholds()) t[th.name] = context.threshold(rule.id(), th);
  return t;
}

json windows_json(const IntervalSet& windows, size_t limit) {
  json out = json::array();
  for (size_t i = 0; i < windows.size() && i < limit; ++i)
    out.push_back({windows[i].begin, windows[i].end});
  return out;
}

// Longest first, for evidence.
IntervalSet longest(IntervalSet set, size_t limit) {
  std::sort(set.begin(), set.end(),
            [](const Interval& a, const Interval& b) { return a.length() > b.length(); });
  if (set.size() > limit) set.resize(limit);
  return set;
}

// The offending events of a finding, so a viewer finds them on its timeline (the GUI marks and
// jumps to them): "offending_events", the `limit` longest GPU events of `indexes` with their kind,
// name, start and end and their track (device and stream), longest first; and "focus", a tight
// window around the worst (longest) one, where the finding's own window spans every instance.
const char* gpu_kind_name(GpuEventKind kind) {
  return kind == GpuEventKind::kernel   ? "kernel"
         : kind == GpuEventKind::memcpy ? "memcpy"
                                        : "memset";
}
void add_offending_gpu_events(json& evidence, const CaptureData& data,
                              std::vector<uint32_t> indexes, size_t limit = 50) {
  if (indexes.empty()) return;
  const auto& g = data.gpu;
  std::sort(indexes.begin(), indexes.end(), [&](uint32_t a, uint32_t b) {
    return g.duration(a) != g.duration(b) ? g.duration(a) > g.duration(b) : a < b;
  });
  if (indexes.size() > limit) indexes.resize(limit);
  json events = json::array();
  for (uint32_t i : indexes)
    events.push_back({{"kind", gpu_kind_name(g.kind[i])},
                      {"name", data.name(g.name_id[i])},
                      {"start", g.start[i]},
                      {"end", g.end[i]},
                      {"device", g.device[i]},
                      {"stream", g.stream[i]}});
  evidence["offending_events"] = std::move(events);
  evidence["focus"] = json::array({{g.start[indexes[0]], g.end[indexes[0]]}});
}
// "focus" alone, for findings whose worst instance is a stretch of time (an idle gap, a wait).
void add_focus(json& evidence, const Interval& worst) {
  if (!worst.empty()) evidence["focus"] = json::array({{worst.begin, worst.end}});
}

store::Finding make_finding(const Rule& rule, const AnalysisContext& context,
                            std::optional<int32_t> device, Interval window, int64_t impact_ns,
                            int64_t denominator_ns, json evidence, std::string recommendation) {
  store::Finding f;
  f.captureId = context.data().capture.id;
  f.rule = rule.id();
  f.severity = severity_for(impact_ns, denominator_ns);
  f.deviceId = device;
  f.window_start = window.begin;
  f.window_end = window.end;
  f.impact_ns = impact_ns;
  evidence["thresholds"] = thresholds_json(rule, context);
  evidence["denominator_ns"] = denominator_ns;
  // Names from the trace may hold invalid UTF-8 (untrusted input): U+FFFD instead of an exception.
  f.evidence_json = evidence.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  f.recommendation = std::move(recommendation);
  f.created_ns = context.now_ns();
  return f;
}

// Top offenders by name: count and summed time.
struct Offender {
  int64_t name_id = 0;
  int64_t count = 0;
  int64_t total_ns = 0;
};
// `total_key`: what total_ns sums, named as a sum where the parts can overlap in time (summed
// launch delays of concurrent launches exceed the capture: "summed_delay_ns", not a duration).
json offenders_json(const CaptureData& data, const std::unordered_map<int64_t, Offender>& by_name,
                    size_t limit, const char* total_key = "total_ns") {
  std::vector<Offender> list;
  for (const auto& [id, o] : by_name) list.push_back(o);
  std::sort(list.begin(), list.end(), [](const Offender& a, const Offender& b) {
    return a.count != b.count ? a.count > b.count : a.total_ns > b.total_ns;
  });
  json out = json::array();
  for (size_t i = 0; i < list.size() && i < limit; ++i)
    out.push_back({{"name", data.name(list[i].name_id)},
                   {"count", list[i].count},
                   {total_key, list[i].total_ns}});
  return out;
}

// Communication vs. computation on one device (HTA get_comm_comp_overlap): the union of
// communication kernels, the part not covered by computation kernels, and offenders by name.
struct CommOverlap {
  int64_t comm_ns = 0;
  int64_t exposed_ns = 0;
  std::unordered_map<int64_t, Offender> by_name;
  double overlap() const { return comm_ns > 0 ? 1.0 - double(exposed_ns) / double(comm_ns) : 1.0; }
};
CommOverlap comm_overlap(const CaptureData& data, const std::vector<uint32_t>& indexes) {
  const auto& g = data.gpu;
  CommOverlap out;
  SortedUnion comm, compute;  // united as read: `indexes` are in start order
  for (uint32_t i : indexes) {
    if (g.work_class[i] == WorkClass::computation) compute.add({g.start[i], g.end[i]});
    if (g.work_class[i] != WorkClass::communication) continue;
    comm.add({g.start[i], g.end[i]});
    Offender& o = out.by_name[g.name_id[i]];
    o.name_id = g.name_id[i], ++o.count, o.total_ns += g.duration(i);
  }
  if (out.by_name.empty()) return out;  // no communication event
  const IntervalSet comm_set = comm.take();
  out.comm_ns = total_length(comm_set);
  out.exposed_ns = total_length(subtract(comm_set, compute.take()));
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains_any(const std::string& haystack, std::initializer_list<const char*> needles) {
  for (const char* n : needles)
    if (haystack.find(n) != std::string::npos) return true;
  return false;
}

// Collects the inputs a rule lacks: require(present, what) adds `what` when `present` is false.
class Needs {
 public:
  Needs& require(bool present, const char* what) {
    if (!present) list_.emplace_back(what);
    return *this;
  }
  operator std::vector<std::string>() const { return list_; }

 private:
  std::vector<std::string> list_;
};

// Launch-based rules: kernels, the API calls that launched them, and the link between the two.
std::vector<std::string> launch_needs(const DataInventory& inv) {
  return Needs()
      .require(inv.kernels > 0, needs::kernels)
      .require(inv.runtime_calls > 0, needs::runtime_calls)
      .require(inv.runtime_calls == 0 || inv.correlated_gpu_events > 0, needs::launch_correlation);
}

// ---------------------------------------------------------------------------------------------
// What each rule reads beyond GPU events, iterations and GPU properties (Rule::reads()).
// Launch statistics and the temporal/idle breakdowns join GPU work to its launching call (HTA's
// last-step filter too), and the temporal breakdown counts stream waits.
CaptureParts gpu_events_only() {
  return CaptureParts::gpu_only();
}
CaptureParts with_runtime() {
  CaptureParts p = CaptureParts::gpu_only();
  p.runtime = true;
  return p;
}
CaptureParts with_launches() {
  CaptureParts p = with_runtime();
  p.gpu_syncs = true;
  return p;
}
CaptureParts with_host_ops() {
  CaptureParts p = CaptureParts::gpu_only();
  p.cpu_ops = p.dataloader_ops = true;
  return p;
}
CaptureParts host_activity() {  // CPU ops, DataLoader ops and API calls
  CaptureParts p = with_host_ops();
  p.runtime = true;
  return p;
}
CaptureParts with_memory_events() {
  CaptureParts p = CaptureParts::gpu_only();
  p.memory_events = true;
  return p;
}

class GpuIdleGaps : public Rule {
 public:
  CaptureParts reads() const override { return gpu_events_only(); }
  std::string id() const override { return "gpu_idle_gaps"; }
  std::string title() const override { return "GPU idle for long stretches inside the capture"; }
  std::vector<Threshold> thresholds() const override {
    return {{"min_gap_ns", 500e6, "nsys analyze gpu_gaps: gaps longer than 500 ms"}};
  }
  std::vector<std::string> unmet_needs(const AnalysisContext& context) const override {
    const DataInventory& inv = context.inventory();
    return Needs().require(inv.gpu_events() > 0, needs::gpu_activity);
  }
  std::vector<store::Finding> evaluate(const AnalysisContext& context) const override {
    const auto min_gap = static_cast<int64_t>(threshold(context, "min_gap_ns"));
    std::vector<store::Finding> out;
    const CaptureData& data = context.data();
    for (const auto& [device, busy] : data.busy_by_device) {
      auto span = data.device_span(device);
      if (!span) continue;
      IntervalSet long_gaps;
      for (const Interval& gap : gaps(busy, *span))
        if (gap.length() > min_gap) long_gaps.push_back(gap);
      if (long_gaps.empty()) continue;
      const int64_t impact = total_length(long_gaps);
      json evidence = {{"gap_count", long_gaps.size()},
                       {"gap_total_ns", impact},
                       {"longest_gaps", windows_json(longest(long_gaps, 10), 10)}};
      add_focus(evidence, longest(long_gaps, 1).front());
      std::string advice = std::to_string(long_gaps.size()) + " gap(s) longer than " + ms(min_gap) +
                           " leave GPU " + std::to_string(device) + " idle for " + ms(impact) +
                           " (" + percent(double(impact) / double(span->length())) +
                           " of its active span). Look at what the host does in these windows "
                           "(data loading, checkpointing, evaluation, host synchronization) and "
                           "overlap it with GPU work: prefetch batches, write checkpoints "
                           "asynchronously, avoid blocking .item()/.cpu() calls.";
      out.push_back(make_finding(*this, context, device,
                                 {long_gaps.front().begin, long_gaps.back().end}, impact,
                                 span->length(), std::move(evidence), std::move(advice)));
    }
    return out;
  }
};

// ---------------------------------------------------------------------------------------------
class LowGpuUtilization : public Rule {
 public:
  CaptureParts reads() const override { return gpu_events_only(); }
  std::string id() const override { return "low_gpu_utilization"; }
  std::string title() const override {
    return "GPU busy for less than half of the step time (profiler-plugin utilization)";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"min_utilization", 0.5,
             "PyTorch profiler (TensorBoard plugin) low GPU utilization advice: below 50 %"}};
  }
  std::vector<std::string> unmet_needs(const AnalysisContext& context) const override {
    const DataInventory& inv = context.inventory();
    return Needs().require(inv.gpu_events() > 0, needs::gpu_activity);
  }
  std::vector<store::Finding> evaluate(const AnalysisContext& context) const override {
    const double min_util = threshold(context, "min_utilization");
    std::vector<store::Finding> out;
    for (const GpuUtilization& u : context.utilization()) {
      if (u.window.length() <= 0 || u.utilization() >= min_util) continue;
      const int64_t idle = u.window.length() - u.busy_ns;
      json evidence = {{"utilization", u.utilization()},
                       {"busy_ns", u.busy_ns},
                       {"window_ns", u.window.length()},
                       {"window_is_steps", u.window_is_steps}};
      std::string advice = "GPU " + std::to_string(u.device) + ": GPU utilization " +
                           percent(u.utilization()) + " over the " +
                           (u.window_is_steps ? "profiled steps" : "capture") + "; " + ms(idle) +
                           " of GPU time is idle. Check the other findings for the cause (input "
                           "pipeline, launch overhead, synchronization); if the job is small for "
                           "this GPU, raise the batch size or share the GPU with other jobs "
                           "(fleetscope share plan).";
      out.push_back(make_finding(*this, context, u.device, u.window, idle, u.window.length(),
                                 std::move(evidence), std::move(advice)));
    }
    return out;
  }
};

// ---------------------------------------------------------------------------------------------
class LaunchBoundSmallKernels : public Rule {
 public:
  CaptureParts reads() const override { return with_launches(); }
  std::string id() const override { return "launch_bound_small_kernels"; }
  std::string title() const override {
    return "Kernels shorter than their launch call keep the GPU waiting on the CPU";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"runtime_cutoff_ns", 50e3, "HTA cuda_kernel_launch_stats runtime_cutoff (50 us)"},
            {"kernel_wait_ns", 30e3, "HTA idle time breakdown consecutive_kernel_delay (30 us)"},
            {"min_short_kernel_share", 0.3, "fleetscope: at least 30 % of launches are short"}};
  }
  std::vector<std::string> unmet_needs(const AnalysisContext& context) const override {
    const DataInventory& inv = context.inventory();
    return launch_needs(inv);
  }
  std::vector<store::Finding> evaluate(const AnalysisContext& context) const override {
    const auto cutoff = static_cast<int64_t>(threshold(context, "runtime_cutoff_ns"));
    const auto wait = static_cast<int64_t>(threshold(context, "kernel_wait_ns"));
    const double min_share = threshold(context, "min_short_kernel_share");
    const CaptureData& data = context.data();
    const LaunchStatistics& stats = context.launches(cutoff, 100'000);
    if (stats.launches.empty()) return {};
    const double share = double(stats.short_kernels) / double(stats.launches.size());
    if (share < min_share) return {};

    // Stream idle time per HTA category, summed over streams (evidence and impact below).
    int64_t host_wait = 0, kernel_wait = 0;
    for (const IdleTimeBreakdown& s : context.idle(wait)) {
      host_wait += std::max<int64_t>(0, s.host_wait_ns);
      kernel_wait += std::max<int64_t>(0, s.kernel_wait_ns);
    }
    int64_t span_total = 0, idle_total = 0;
    for (const TemporalBreakdown& t : context.temporal())
      span_total += t.span_ns, idle_total += t.idle_ns;
    // Two lower-bound estimates of the same loss, the larger taken: the launch-gap idle time
    // (HTA kernel wait), and the launch time the short kernels' own work does not cover.
    // Host wait is reported but not counted: it has causes other than launch cost.
    const int64_t uncovered = stats.short_kernel_cpu_ns - stats.short_kernel_gpu_ns;
    const int64_t impact = std::min(std::max(kernel_wait, uncovered), idle_total);

    std::unordered_map<int64_t, Offender> by_name;
    std::vector<uint32_t> short_kernels;
    for (const LaunchRecord& r : stats.launches) {
      if (!(r.cpu_duration_ns <= cutoff && r.gpu_duration_ns < r.cpu_duration_ns)) continue;
      short_kernels.push_back(r.gpu_index);
      Offender& o = by_name[data.gpu.name_id[r.gpu_index]];
      o.name_id = data.gpu.name_id[r.gpu_index];
      ++o.count;
      o.total_ns += r.gpu_duration_ns;
    }
    json evidence = {{"launches", stats.launches.size()},
                     {"short_kernels", stats.short_kernels},
                     {"short_kernel_share", share},
                     {"short_kernel_gpu_ns", stats.short_kernel_gpu_ns},
                     {"short_kernel_launch_ns", stats.short_kernel_cpu_ns},
                     {"host_wait_ns", host_wait},
                     {"kernel_wait_ns", kernel_wait},
                     {"top_offenders", offenders_json(data, by_name, 10)}};
    add_offending_gpu_events(evidence, data, std::move(short_kernels));
    auto span = data.gpu_span().value_or(Interval{});
    std::string advice = std::to_string(stats.short_kernels) + " of " +
                         std::to_string(stats.launches.size()) + " launches (" + percent(share) +
                         ") run shorter on the GPU than their launch call takes on the CPU; an "
                         "estimated " +
                         ms(impact) + " of GPU time is lost to launch overhead" +
                         ". Reduce per-kernel launch cost: capture the step in a CUDA graph "
                         "(torch.cuda.CUDAGraph or torch.compile(mode=\"reduce-overhead\")), fuse "
                         "small element-wise kernels (torch.compile), or give each kernel more "
                         "work (larger batch).";
    return {make_finding(*this, context, std::nullopt, span, impact, span_total,
                         std::move(evidence), std::move(advice))};
  }
};

// ---------------------------------------------------------------------------------------------
class LaunchDelayOutliers : public Rule {
 public:
  CaptureParts reads() const override { return with_launches(); }
  std::string id() const override { return "launch_delay_outliers"; }
  std::string title() const override {
    return "Kernels start long after their launch call returned";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"launch_delay_cutoff_ns", 100e3,
             "HTA cuda_kernel_launch_stats launch_delay_cutoff (100 us)"},
            {"min_outlier_share", 0.05, "fleetscope: at least 5 % of launches are delayed"}};
  }
  std::vector<std::string> unmet_needs(const AnalysisContext& context) const override {
    const DataInventory& inv = context.inventory();
    return launch_needs(inv);
  }
  std::vector<store::Finding> evaluate(const AnalysisContext& context) const override {
    const auto cutoff = static_cast<int64_t>(threshold(context, "launch_delay_cutoff_ns"));
    const double min_share = threshold(context, "min_outlier_share");
    const CaptureData& data = context.data();
    const LaunchStatistics& stats = context.launches(50'000, cutoff);
    if (stats.launches.empty()) return {};
    const double share = double(stats.launch_delay_outliers) / double(stats.launches.size());
    if (stats.launch_delay_outliers == 0 || share < min_share) return {};

    // Impact: the part of each delayed kernel's wait (launch-call end → kernel start) during
    // which its device did nothing; queueing behind busy work costs no GPU time.
    std::map<int32_t, std::vector<Interval>> waits;
    std::unordered_map<int64_t, Offender> by_name;
    std::vector<uint32_t> delayed;
    for (const LaunchRecord& r : stats.launches) {
      if (r.launch_delay_ns() <= cutoff) continue;
      delayed.push_back(r.gpu_index);
      waits[r.device].push_back({r.cpu_start + r.cpu_duration_ns, r.gpu_start});
      Offender& o = by_name[data.gpu.name_id[r.gpu_index]];
      o.name_id = data.gpu.name_id[r.gpu_index];
      ++o.count;
      o.total_ns += r.launch_delay_ns();
    }
    int64_t impact = 0;
    IntervalSet all_waits;
    for (auto& [device, list] : waits) {
      IntervalSet united = unite(std::move(list));
      auto span = data.device_span(device).value_or(Interval{});
      impact += total_length(intersect(united, gaps(data.busy_by_device.at(device), span)));
      all_waits = unite(all_waits, united);
    }
    int64_t span_total = 0;
    for (const TemporalBreakdown& t : context.temporal()) span_total += t.span_ns;
    json evidence = {{"launches", stats.launches.size()},
                     {"delayed_launches", stats.launch_delay_outliers},
                     {"delayed_share", share},
                     {"launch_delay_p50_ns", stats.launch_delay_p50_ns},
                     {"launch_delay_p95_ns", stats.launch_delay_p95_ns},
                     {"launch_delay_max_ns", stats.launch_delay_max_ns},
                     {"idle_while_delayed_ns", impact},
                     {"longest_waits", windows_json(longest(all_waits, 10), 10)},
                     {"top_offenders", offenders_json(data, by_name, 10, "summed_delay_ns")}};
    add_offending_gpu_events(evidence, data, std::move(delayed));
    if (!all_waits.empty()) add_focus(evidence, longest(all_waits, 1).front());
    std::string advice =
        std::to_string(stats.launch_delay_outliers) + " launches (" + percent(share) +
        ") started more than " + ms(cutoff) + " after their launch call returned (p95 " +
        ms(stats.launch_delay_p95_ns) +
        "). Where the GPU was busy this is a deep queue (fine); "
        "the GPU was idle for " +
        ms(impact) +
        " of these waits, which points at cross-stream dependencies (cudaStreamWaitEvent), "
        "implicit synchronization of the default stream, or pageable copies serializing the "
        "stream: use non-default streams and pinned memory, and remove needless event waits.";
    auto window =
        all_waits.empty() ? Interval{} : Interval{all_waits.front().begin, all_waits.back().end};
    return {make_finding(*this, context, std::nullopt, window, impact, span_total,
                         std::move(evidence), std::move(advice))};
  }
};

// ---------------------------------------------------------------------------------------------
class DataLoaderBottleneck : public Rule {
 public:
  // The plugin's steps move to the device side along the launches: the API calls are read too.
  CaptureParts reads() const override { return host_activity(); }
  std::string id() const override { return "dataloader_bottleneck"; }
  std::string title() const override { return "Input pipeline takes a large share of each step"; }
  std::vector<Threshold> thresholds() const override {
    return {{"max_step_share", 0.05,
             "PyTorch profiler (TensorBoard plugin) DataLoader advice: above 5 % of step time"}};
  }
  std::vector<std::string> unmet_needs(const AnalysisContext& context) const override {
    const DataInventory& inv = context.inventory();
    // DataLoader ranges are CPU ops: without any CPU op their absence says nothing.
    return Needs()
        .require(inv.gpu_events() > 0, needs::gpu_activity)
        .require(inv.iterations > 0, needs::steps)
        .require(inv.cpu_ops + inv.dataloader_ops > 0, needs::cpu_ops);
  }
  std::vector<store::Finding> evaluate(const AnalysisContext& context) const override {
    const double max_share = threshold(context, "max_step_share");
    const CaptureData& data = context.data();
    if (data.iterations.empty() || data.dataloader_ops.empty()) return {};
    std::vector<Interval> ops;
    for (const HostRange& r : data.dataloader_ops) ops.push_back({r.start, r.end});
    const IntervalSet loading = unite(std::move(ops));
    std::vector<Interval> step_list;
    for (const auto& it : data.iterations) step_list.push_back({it.start, it.end});
    const IntervalSet steps = unite(std::move(step_list));
    const int64_t step_ns = total_length(steps);
    const IntervalSet loading_in_steps = intersect(loading, steps);
    if (step_ns <= 0) return {};
    // The share the step table shows (the plugin's breakdown: DataLoader time not covered by GPU
    // work or communication), so the finding and the table quote one figure.
    const std::optional<DataLoaderShare> table = dataloader_share(step_breakdown(data));
    if (!table || table->share() <= max_share) return {};
    const double share = table->share();

    // Impact: DataLoader time during which no GPU had work.
    IntervalSet any_busy;
    for (const auto& [device, busy] : data.busy_by_device) any_busy = unite(any_busy, busy);
    const int64_t impact = total_length(subtract(loading_in_steps, any_busy));
    json evidence = {{"steps", table->steps},
                     {"step_ns", table->step_ns},
                     {"dataloader_ns", table->dataloader_ns},
                     {"dataloader_share", share},
                     {"dataloader_host_ns", total_length(loading_in_steps)},
                     {"gpu_idle_during_dataloader_ns", impact},
                     {"longest_fetches", windows_json(longest(loading_in_steps, 10), 10)}};
    std::string advice =
        "The DataLoader takes " + percent(share) + " of step time (" + ms(table->dataloader_ns) +
        " over " + std::to_string(table->steps) + " steps, as in the step table), " + ms(impact) +
        " of it with the GPU idle. Load data in parallel and ahead of time: DataLoader("
        "num_workers=N>0, pin_memory=True, persistent_workers=True, prefetch_factor=2+), and move "
        "heavy preprocessing off the training process.";
    return {make_finding(*this, context, std::nullopt, *data.step_span(), impact, step_ns,
                         std::move(evidence), std::move(advice))};
  }
};

// ---------------------------------------------------------------------------------------------
class PageableMemcpy : public Rule {
 public:
  CaptureParts reads() const override { return gpu_events_only(); }
  std::string id() const override { return "pageable_memcpy"; }
  std::string title() const override { return "Host-device copies use pageable host memory"; }
  std::vector<Threshold> thresholds() const override {
    return {{"min_count", 1, "nsys analyze cuda_memcpy_async: any copy with pageable memory"}};
  }
  std::vector<std::string> unmet_needs(const AnalysisContext& context) const override {
    const DataInventory& inv = context.inventory();
    // No copies at all: evaluated, nothing to find. Copies of unknown memory kind: cannot tell.
    return Needs()
        .require(inv.gpu_events() > 0, needs::gpu_activity)
        .require(inv.memcpys == 0 || inv.memcpys_with_memory_kinds > 0, needs::memory_kinds);
  }
  std::vector<store::Finding> evaluate(const AnalysisContext& context) const override {
    const auto min_count = static_cast<int64_t>(threshold(context, "min_count"));
    const CaptureData& data = context.data();
    const auto& g = data.gpu;
    std::map<int32_t, std::vector<uint32_t>> by_device;
    for (uint32_t i = 0; i < g.size(); ++i)
      if (g.kind[i] == GpuEventKind::memcpy &&
          (g.src_kind[i] == store::kMemPageable || g.dst_kind[i] == store::kMemPageable))
        by_device[g.device[i]].push_back(i);
    std::vector<store::Finding> out;
    for (const auto& [device, list] : by_device) {
      if (static_cast<int64_t>(list.size()) < min_count) continue;
      int64_t total = 0, bytes = 0;
      std::unordered_map<int64_t, Offender> by_name;
      for (uint32_t i : list) {
        total += g.duration(i), bytes += g.bytes[i];
        Offender& o = by_name[g.name_id[i]];
        o.name_id = g.name_id[i], ++o.count, o.total_ns += g.duration(i);
      }
      auto span = data.device_span(device).value_or(Interval{});
      json evidence = {{"copies", list.size()},
                       {"bytes", bytes},
                       {"copy_ns", total},
                       {"top_offenders", offenders_json(data, by_name, 10)}};
      add_offending_gpu_events(evidence, data, list);
      std::string advice =
          std::to_string(list.size()) + " copies on GPU " + std::to_string(device) + " (" +
          std::to_string(bytes) + " bytes, " + ms(total) +
          ") move pageable host memory: the driver stages them through a bounce buffer and they "
          "cannot overlap with compute. Allocate the host buffers pinned (DataLoader(pin_memory="
          "True), tensor.pin_memory(), cudaHostAlloc) and copy with non_blocking=True. The impact "
          "is an upper bound: the whole copy time.";
      out.push_back(make_finding(*this, context, device,
                                 {g.start[list.front()], g.end[list.back()]}, total, span.length(),
                                 std::move(evidence), std::move(advice)));
    }
    return out;
  }
};

// ---------------------------------------------------------------------------------------------
// sync_memcpy and sync_memset: one class, two ids (nsys has one rule for each).
class SynchronousMemoryCall : public Rule {
 public:
  CaptureParts reads() const override { return with_runtime(); }
  explicit SynchronousMemoryCall(bool memset) : memset_(memset) {}
  std::string id() const override { return memset_ ? "sync_memset" : "sync_memcpy"; }
  std::string title() const override {
    return memset_ ? "Synchronous memset calls block the host and drain the GPU queue"
                   : "Synchronous memcpy calls block the host and drain the GPU queue";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"min_count", 1,
             memset_ ? "nsys analyze cuda_memset_sync: any call"
                     : "nsys analyze cuda_memcpy_sync: any call"}};
  }
  std::vector<std::string> unmet_needs(const AnalysisContext& context) const override {
    const DataInventory& inv = context.inventory();
    // Without copies (memsets) there is nothing to find; with them, the launching call decides.
    const bool any = memset_ ? inv.memsets > 0 : inv.memcpys > 0;
    return Needs()
        .require(inv.gpu_events() > 0, needs::gpu_activity)
        .require(!any || inv.runtime_calls > 0, needs::runtime_calls)
        .require(!any || inv.runtime_calls == 0 || inv.correlated_gpu_events > 0,
                 needs::launch_correlation);
  }
  std::vector<store::Finding> evaluate(const AnalysisContext& context) const override {
    const auto min_count = static_cast<int64_t>(threshold(context, "min_count"));
    const CaptureData& data = context.data();
    const auto& g = data.gpu;
    std::unordered_map<int64_t, bool> is_sync_api;
    auto sync_api = [&](int64_t name_id) {
      auto it = is_sync_api.find(name_id);
      if (it != is_sync_api.end()) return it->second;
      const std::string& n = data.name(name_id);
      const bool memcpy_api = n.rfind("cudaMemcpy", 0) == 0 || n.rfind("cuMemcpy", 0) == 0;
      const bool memset_api = n.rfind("cudaMemset", 0) == 0 || n.rfind("cuMemset", 0) == 0;
      bool sync = (memset_ ? memset_api : memcpy_api) && n.find("Async") == std::string::npos;
      return is_sync_api[name_id] = sync;
    };
    std::map<int32_t, std::vector<uint32_t>> by_device;
    for (uint32_t i = 0; i < g.size(); ++i) {
      if (g.kind[i] == GpuEventKind::kernel) continue;
      const int64_t call = data.launch_call_of[i];
      if (call >= 0 && sync_api(data.runtime.name_id[call])) by_device[g.device[i]].push_back(i);
    }
    std::vector<store::Finding> out;
    for (const auto& [device, list] : by_device) {
      if (static_cast<int64_t>(list.size()) < min_count) continue;
      // Impact: the idle gap that follows each synchronous copy on its device, until the host
      // has issued the next GPU work.
      const IntervalSet& busy = data.busy_by_device.at(device);
      auto span = data.device_span(device).value_or(Interval{});
      const IntervalSet idle = gaps(busy, span);
      IntervalSet after;
      std::unordered_map<int64_t, Offender> by_name;
      for (uint32_t i : list) {
        auto it = std::lower_bound(idle.begin(), idle.end(), g.end[i],
                                   [](const Interval& iv, int64_t t) { return iv.begin < t; });
        if (it != idle.end() && it->begin == g.end[i]) after.push_back(*it);
        const int64_t api = data.runtime.name_id[data.launch_call_of[i]];
        Offender& o = by_name[api];
        o.name_id = api, ++o.count, o.total_ns += g.duration(i);
      }
      after = unite(std::move(after));
      const int64_t impact = total_length(after);
      json evidence = {{"calls", list.size()},
                       {"idle_after_ns", impact},
                       {"longest_idle_after", windows_json(longest(after, 10), 10)},
                       {"top_offenders", offenders_json(data, by_name, 10)}};
      std::string advice =
          std::to_string(list.size()) + (memset_ ? " synchronous memset" : " synchronous copy") +
          " calls on GPU " + std::to_string(device) +
          " block the host until the GPU finishes; the GPU then idles " + ms(impact) +
          " until the host issues more work. Use the Async variants on a "
          "non-default stream with pinned host memory (tensor.to(device, non_blocking=True)), "
          "and avoid .item()/.cpu() inside the training step.";
      out.push_back(make_finding(*this, context, device,
                                 {g.start[list.front()], g.end[list.back()]}, impact, span.length(),
                                 std::move(evidence), std::move(advice)));
    }
    return out;
  }

 private:
  bool memset_;
};

// ---------------------------------------------------------------------------------------------
class ExcessiveSync : public Rule {
 public:
  CaptureParts reads() const override { return with_runtime(); }
  std::string id() const override { return "excessive_sync"; }
  std::string title() const override {
    return "Many host synchronization calls per step drain the GPU queue";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"max_calls_per_step", 2,
             "fleetscope: nsys analyze cuda_api_sync lists every sync call; a step needs at most "
             "one or two"}};
  }
  std::vector<std::string> unmet_needs(const AnalysisContext& context) const override {
    const DataInventory& inv = context.inventory();
    // Calls are counted per step: a count over a whole capture of unknown length means nothing.
    return Needs()
        .require(inv.runtime_calls > 0, needs::runtime_calls)
        .require(inv.iterations > 0, needs::steps);
  }
  std::vector<store::Finding> evaluate(const AnalysisContext& context) const override {
    const double max_per_step = threshold(context, "max_calls_per_step");
    const CaptureData& data = context.data();
    const auto& rt = data.runtime;
    std::unordered_map<int64_t, bool> is_sync_api;
    std::vector<uint32_t> calls;
    for (uint32_t i = 0; i < rt.size(); ++i) {
      auto it = is_sync_api.find(rt.name_id[i]);
      if (it == is_sync_api.end()) {
        const std::string& n = data.name(rt.name_id[i]);
        const bool sync = n.find("Synchronize") != std::string::npos &&
                          (n.rfind("cuda", 0) == 0 || n.rfind("cu", 0) == 0);
        it = is_sync_api.emplace(rt.name_id[i], sync).first;
      }
      if (it->second) calls.push_back(i);
    }
    if (calls.empty()) return {};
    const int64_t steps = std::max<int64_t>(1, static_cast<int64_t>(data.iterations.size()));
    const double per_step = double(calls.size()) / double(steps);
    if (per_step <= max_per_step) return {};

    // Impact: the GPU idle time right after each sync call returns, until the host issues work.
    IntervalSet any_busy;
    for (const auto& [device, busy] : data.busy_by_device) any_busy = unite(any_busy, busy);
    auto span = data.gpu_span().value_or(Interval{});
    const IntervalSet idle = gaps(any_busy, span);
    std::vector<Interval> after;
    std::unordered_map<int64_t, Offender> by_name;
    for (uint32_t i : calls) {
      auto it = std::upper_bound(idle.begin(), idle.end(), rt.end[i],
                                 [](int64_t t, const Interval& iv) { return t < iv.end; });
      if (it != idle.end() && it->begin <= rt.end[i]) after.push_back({rt.end[i], it->end});
      Offender& o = by_name[rt.name_id[i]];
      o.name_id = rt.name_id[i], ++o.count, o.total_ns += rt.end[i] - rt.start[i];
    }
    const IntervalSet idle_after = unite(std::move(after));
    const int64_t impact = total_length(idle_after);
    json evidence = {{"calls", calls.size()},
                     {"steps", data.iterations.size()},
                     {"calls_per_step", per_step},
                     {"idle_after_ns", impact},
                     {"longest_idle_after", windows_json(longest(idle_after, 10), 10)},
                     {"top_offenders", offenders_json(data, by_name, 10)}};
    std::string advice =
        std::to_string(calls.size()) + " synchronization calls (" + per_step_text(per_step) +
        " per step) make the host wait for the GPU; the GPU then idles " + ms(impact) +
        " until the host issues more work. Remove explicit torch.cuda.synchronize() and "
        "implicit ones (.item(), .cpu(), printing tensors, data-dependent shapes) from the step; "
        "synchronize on events only where a result is really needed.";
    return {make_finding(*this, context, std::nullopt,
                         {rt.start[calls.front()], rt.end[calls.back()]}, impact, span.length(),
                         std::move(evidence), std::move(advice))};
  }
};

// ---------------------------------------------------------------------------------------------
class MemoryNearCapacity : public Rule {
 public:
  CaptureParts reads() const override { return with_memory_events(); }
  std::string id() const override { return "memory_near_capacity"; }
  std::string title() const override {
    return "Peak device memory close to the GPU's capacity (OOM and allocator-retry risk)";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"max_capacity_share", 0.9, "fleetscope: peak above 90 % of TARGET_INFO totalMemory"}};
  }
  std::vector<std::string> unmet_needs(const AnalysisContext& context) const override {
    const DataInventory& inv = context.inventory();
    return Needs()
        .require(inv.memory_events > 0, needs::memory_events)
        .require(inv.gpus_with_capacity > 0, needs::gpu_capacity);
  }
  std::vector<store::Finding> evaluate(const AnalysisContext& context) const override {
    const double max_share = threshold(context, "max_capacity_share");
    const CaptureData& data = context.data();
    std::vector<Interval> steps;
    for (const auto& it : data.iterations) steps.push_back({it.start, it.end});
    std::vector<store::Finding> out;
    for (const store::GpuInfo& gpu : data.gpus) {
      // Not evaluated without the capacity (TARGET_INFO_GPU.totalMemory) or memory events.
      if (!gpu.totalMemory || *gpu.totalMemory <= 0) continue;
      std::vector<store::MemoryEvent> events;
      for (const auto& e : data.memory)
        if (e.deviceId == gpu.id) events.push_back(e);
      if (events.empty()) continue;
      const MemoryFootprint footprint = memory_footprint(events, steps);
      // What the allocator holds (reserved) is what the device has lost, when reported.
      const int64_t held = std::max(footprint.peak_bytes, footprint.reserved_peak_bytes);
      const double share = double(held) / double(*gpu.totalMemory);
      if (share <= max_share) continue;
      auto span = data.device_span(gpu.id).value_or(Interval{events.front().ts, events.back().ts});
      json evidence = {{"peak_bytes", footprint.peak_bytes},
                       {"capacity_bytes", *gpu.totalMemory},
                       {"peak_share", share},
                       {"persistent_bytes", footprint.persistent_bytes},
                       {"ephemeral_peak_bytes", footprint.ephemeral_peak_bytes},
                       {"reserved_peak_bytes", footprint.reserved_peak_bytes},
                       {"fragmentation", footprint.fragmentation},
                       {"allocations", footprint.allocations},
                       {"allocated_bytes", footprint.allocated_bytes}};
      std::string advice =
          std::string(held > footprint.peak_bytes ? "Reserved (cached) memory"
                                                  : "Peak allocated memory") +
          " on GPU " + std::to_string(gpu.id) + " reaches " + percent(share) + " of its " +
          std::to_string(*gpu.totalMemory) +
          " bytes: allocation spikes can run out of memory or force allocator cache flushes "
          "(cudaFree + retry, slow). Lower the peak: activation checkpointing, smaller micro-"
          "batches with gradient accumulation, mixed precision, or free temporaries earlier. "
          "No GPU time is counted as impact (a risk, not a measured loss).";
      out.push_back(make_finding(*this, context, gpu.id, span, 0, span.length(),
                                 std::move(evidence), std::move(advice)));
    }
    return out;
  }
};

// ---------------------------------------------------------------------------------------------
class ConsolidationCandidateRule : public Rule {
 public:
  CaptureParts reads() const override { return with_memory_events(); }
  std::string id() const override { return "consolidation_candidate"; }
  std::string title() const override {
    return "Job uses little of its GPU and fits beside another job (consolidation.h verdict)";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"max_utilization", ConsolidationOptions{}.max_utilization,
             "PyTorch profiler (TensorBoard plugin) low GPU utilization advice: below 50 %"}};
  }
  std::vector<std::string> unmet_needs(const AnalysisContext& context) const override {
    const DataInventory& inv = context.inventory();
    // A busy GPU is no candidate whatever its memory; an idle one needs P and T (memory events).
    bool some_device_idle = false;
    for (const GpuUtilization& u : context.utilization())
      some_device_idle =
          some_device_idle || u.utilization() < threshold(context, "max_utilization");
    return Needs()
        .require(inv.gpu_events() > 0, needs::gpu_activity)
        .require(!some_device_idle || inv.memory_events > 0, needs::memory_events);
  }
  std::vector<store::Finding> evaluate(const AnalysisContext& context) const override {
    ConsolidationOptions options;
    options.max_utilization = threshold(context, "max_utilization");
    const CaptureData& data = context.data();
    std::vector<store::Finding> out;
    for (const ConsolidationCandidate& c : consolidation_candidates(data, options)) {
      if (!c.co_location_candidate) continue;
      const int64_t idle = std::max<int64_t>(0, c.window_ns - c.busy_ns);
      auto span = data.step_span().value_or(data.device_span(c.device).value_or(Interval{}));
      json evidence = {{"workflow", c.workflow},
                       {"utilization", c.utilization},
                       {"busy_ns", c.busy_ns},
                       {"window_ns", c.window_ns},
                       {"persistent_bytes", c.persistent_bytes},
                       {"ephemeral_peak_bytes", c.ephemeral_peak_bytes},
                       {"gpu_memory_bytes", c.gpu_memory_bytes},
                       {"reason", c.reason}};
      std::string advice =
          "The job's GPU utilization on GPU " + std::to_string(c.device) + " is " +
          percent(c.utilization) + " and it needs " +
          std::to_string(c.persistent_bytes + c.ephemeral_peak_bytes) + " bytes (P + T) of its " +
          std::to_string(c.gpu_memory_bytes) +
          ": it can share the GPU with another job (MPS, time-slicing or MIG). Run `fleetscope "
          "share plan` to pair it; " +
          ms(idle) + " of idle GPU time would be reused.";
      out.push_back(make_finding(*this, context, c.device, span, idle, c.window_ns,
                                 std::move(evidence), std::move(advice)));
    }
    return out;
  }
};

// ---------------------------------------------------------------------------------------------
class CommHeavy : public Rule {
 public:
  CaptureParts reads() const override { return gpu_events_only(); }
  std::string id() const override { return "comm_heavy"; }
  std::string title() const override {
    return "Communication kernels take a large share of GPU time";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"max_comm_share", 0.3,
             "fleetscope: HTA temporal/comm-comp breakdown reports the share without a limit; "
             "above 30 % of busy time"}};
  }
  std::vector<std::string> unmet_needs(const AnalysisContext& context) const override {
    const DataInventory& inv = context.inventory();
    return Needs().require(inv.kernels > 0, needs::kernels);
  }
  std::vector<store::Finding> evaluate(const AnalysisContext& context) const override {
    const double max_share = threshold(context, "max_comm_share");
    const CaptureData& data = context.data();
    std::vector<store::Finding> out;
    for (const auto& [device, indexes] : data.events_by_device) {
      const CommOverlap c = comm_overlap(data, indexes);
      if (c.comm_ns == 0) continue;
      const int64_t busy = total_length(data.busy_by_device.at(device));
      const int64_t comm_ns = c.comm_ns;
      const double share = busy > 0 ? double(comm_ns) / double(busy) : 0.0;
      if (share <= max_share) continue;
      // Impact: communication time not hidden behind computation on the same device.
      const int64_t exposed = c.exposed_ns;
      const auto& by_name = c.by_name;
      json evidence = {{"comm_ns", comm_ns},
                       {"busy_ns", busy},
                       {"comm_share", share},
                       {"exposed_comm_ns", exposed},
                       {"top_offenders", offenders_json(data, by_name, 10)}};
      std::string advice =
          "Communication kernels take " + percent(share) + " of GPU " + std::to_string(device) +
          "'s busy time (" + ms(comm_ns) + ", " + ms(exposed) +
          " not overlapped with compute). Reduce or hide it: larger DDP buckets "
          "(bucket_cap_mb), gradient accumulation with no_sync(), FSDP prefetching, compressed "
          "or lower-precision gradients, or fewer GPUs per job if it scales poorly.";
      auto span = data.device_span(device).value_or(Interval{});
      out.push_back(make_finding(*this, context, device, span, exposed, span.length(),
                                 std::move(evidence), std::move(advice)));
    }
    return out;
  }
};

// ---------------------------------------------------------------------------------------------
class TensorCoresUnused : public Rule {
 public:
  CaptureParts reads() const override { return gpu_events_only(); }
  std::string id() const override { return "tensor_cores_unused"; }
  std::string title() const override { return "GEMM/convolution kernels run without tensor cores"; }
  std::vector<Threshold> thresholds() const override {
    return {{"max_non_tc_share", 0.2,
             "fleetscope: HTA kernel breakdown reports GEMM time without a limit; non-tensor-core "
             "GEMM/conv above 20 % of busy kernel time"},
            {"min_non_tc_ns", 1e6, "fleetscope: ignore less than 1 ms of such kernels (noise)"}};
  }
  // `n` is lower-case. fbgemm (FBGEMM_GPU embedding, permute, quantize kernels) is a library
  // name, not a GEMM, and "convert" is no convolution.
  static bool gemm_like(std::string n) {
    for (const char* not_gemm : {"fbgemm", "convert"})
      for (auto at = n.find(not_gemm); at != std::string::npos; at = n.find(not_gemm))
        n.erase(at, std::char_traits<char>::length(not_gemm));
    return contains_any(n, {"gemm", "conv", "matmul"});
  }
  static bool tensor_core(const std::string& n) {
    return contains_any(n, {"h884", "h1688", "s1688", "s16816", "i8816", "xmma", "hmma", "wmma",
                            "tensorop", "tf32", "bf16", "fp16"});
  }
  std::vector<std::string> unmet_needs(const AnalysisContext& context) const override {
    const DataInventory& inv = context.inventory();
    return Needs().require(inv.kernels > 0, needs::kernels);
  }
  std::vector<store::Finding> evaluate(const AnalysisContext& context) const override {
    const double max_share = threshold(context, "max_non_tc_share");
    const auto min_ns = static_cast<int64_t>(threshold(context, "min_non_tc_ns"));
    const CaptureData& data = context.data();
    const auto& g = data.gpu;
    std::vector<store::Finding> out;
    for (const auto& [device, indexes] : data.events_by_device) {
      SortedUnion kernels, plain;  // united as read: `indexes` are in start order
      std::vector<uint32_t> plain_events;
      std::unordered_map<int64_t, Offender> by_name;
      // A trace has a few hundred kernel names and millions of kernels: classify each name once.
      std::unordered_map<int64_t, bool> plain_gemm_name;
      for (uint32_t i : indexes) {
        if (g.kind[i] != GpuEventKind::kernel) continue;
        kernels.add({g.start[i], g.end[i]});
        auto [it, added] = plain_gemm_name.try_emplace(g.name_id[i], false);
        if (added) {
          const std::string name = lower(data.name(g.name_id[i]));
          it->second = gemm_like(name) && !tensor_core(name);
        }
        if (!it->second) continue;
        plain.add({g.start[i], g.end[i]});
        plain_events.push_back(i);
        Offender& o = by_name[g.name_id[i]];
        o.name_id = g.name_id[i], ++o.count, o.total_ns += g.duration(i);
      }
      if (by_name.empty()) continue;
      const int64_t kernel_ns = total_length(kernels.take());
      const IntervalSet plain_set = plain.take();
      const int64_t plain_ns = total_length(plain_set);
      const double share = kernel_ns > 0 ? double(plain_ns) / double(kernel_ns) : 0.0;
      if (share <= max_share || plain_ns < min_ns) continue;
      // The advice names only what this GPU has (device_features.h): no tensor cores before
      // compute capability 7.0, TF32 and bf16 only from 8.0 (Ampere).
      const std::optional<ComputeCapability> cc = compute_capability(data, device);
      if (cc && !cc->has_tensor_cores()) continue;
      json evidence = {{"non_tc_gemm_ns", plain_ns},
                       {"kernel_busy_ns", kernel_ns},
                       {"non_tc_share", share},
                       {"top_offenders", offenders_json(data, by_name, 10)}};
      if (cc) evidence["compute_capability"] = cc->text();
      add_offending_gpu_events(evidence, data, std::move(plain_events));
      std::string how;
      if (!cc)
        how =
            "torch.autocast (fp16; bf16 from compute capability 8.0) or, from compute "
            "capability 8.0 (Ampere) on, TF32: torch.backends.cuda.matmul.allow_tf32 = True / "
            "torch.set_float32_matmul_precision('high')";
      else if (cc->has_tf32())
        how =
            "torch.autocast (bf16/fp16) or torch.backends.cuda.matmul.allow_tf32 = True / "
            "torch.set_float32_matmul_precision('high')";
      else
        how =
            "torch.autocast(dtype=torch.float16) with a GradScaler (this GPU, compute "
            "capability " +
            cc->text() +
            ", has fp16 tensor cores only: TF32 and bfloat16 need compute capability 8.0)";
      std::string advice =
          "GEMM/convolution kernels without a tensor-core marker in their name take " +
          percent(share) + " of GPU " + std::to_string(device) + "'s kernel time (" + ms(plain_ns) +
          "). Run them on tensor cores: " + how +
          ", and keep matrix dimensions multiples of 8 (16 for int8). Impact is the kernels' time "
          "(upper bound).";
      out.push_back(make_finding(*this, context, device,
                                 {plain_set.front().begin, plain_set.back().end}, plain_ns,
                                 kernel_ns, std::move(evidence), std::move(advice)));
    }
    return out;
  }
};

// ---------------------------------------------------------------------------------------------
class FusionCandidates : public Rule {
 public:
  // CPU ops and API calls for the kernel sequences under each op (evidence only).
  CaptureParts reads() const override { return host_activity(); }
  std::string id() const override { return "fusion_candidates"; }
  std::string title() const override {
    return "Long runs of tiny back-to-back kernels on one stream (fusion candidates)";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"max_kernel_ns", 10e3,
             "fleetscope: elementwise-like kernels shorter than 10 us (below HTA's 30 us "
             "consecutive_kernel_delay)"},
            {"min_run_length", 8, "fleetscope: at least 8 consecutive short kernels"}};
  }
  std::vector<std::string> unmet_needs(const AnalysisContext& context) const override {
    const DataInventory& inv = context.inventory();
    return Needs().require(inv.kernels > 0, needs::kernels);
  }
  std::vector<store::Finding> evaluate(const AnalysisContext& context) const override {
    const auto max_ns = static_cast<int64_t>(threshold(context, "max_kernel_ns"));
    const auto min_run = static_cast<size_t>(threshold(context, "min_run_length"));
    const CaptureData& data = context.data();
    const auto& g = data.gpu;
    struct PerDevice {
      int64_t runs = 0, kernels = 0, gap_ns = 0;
      IntervalSet windows;
      std::unordered_map<int64_t, Offender> by_name;
      std::vector<uint32_t> longest_run;  // the kernels of the run with the longest window
    };
    std::map<int32_t, PerDevice> devices;
    for (const auto& [key, indexes] : data.events_by_stream) {
      std::vector<uint32_t> run;
      const int32_t device = key.first;  // a lambda may not capture a structured binding (clang 14)
      auto flush = [&]() {
        if (run.size() >= min_run) {
          PerDevice& d = devices[device];
          ++d.runs, d.kernels += static_cast<int64_t>(run.size());
          for (size_t k = 1; k < run.size(); ++k)
            d.gap_ns += std::max<int64_t>(0, g.start[run[k]] - g.end[run[k - 1]]);
          d.windows.push_back({g.start[run.front()], g.end[run.back()]});
          const auto length = [&](const std::vector<uint32_t>& r) {
            return g.end[r.back()] - g.start[r.front()];
          };
          if (d.longest_run.empty() || length(run) > length(d.longest_run)) d.longest_run = run;
          for (uint32_t i : run) {
            Offender& o = d.by_name[g.name_id[i]];
            o.name_id = g.name_id[i], ++o.count, o.total_ns += g.duration(i);
          }
        }
        run.clear();
      };
      for (uint32_t i : indexes) {
        if (g.kind[i] == GpuEventKind::kernel && g.duration(i) < max_ns) {
          run.push_back(i);
        } else {
          flush();
        }
      }
      flush();
    }
    // Evidence: HTA's frequent kernel sequences under ATen ops (get_frequent_cuda_kernel_sequences,
    // operator_name "aten::", roots the outermost ATen op of each chain), ranked by total GPU time;
    // fusing one into a single kernel saves at least the gaps between its kernels (launch and
    // scheduling time). Memory round trips between the kernels would go too, but the trace holds no
    // per-kernel memory traffic to size them.
    KernelSequenceOptions sequence_options;
    sequence_options.outermost_per_chain = true;
    std::vector<KernelSequence> sequences = frequent_kernel_sequences(data, sequence_options);
    std::stable_sort(
        sequences.begin(), sequences.end(),
        [](const KernelSequence& a, const KernelSequence& b) { return a.gpu_ns > b.gpu_ns; });
    json sequence_evidence = json::array();
    int64_t sequence_saving_ns = 0;
    for (const KernelSequence& s : sequences) {
      if (s.count < 2) continue;  // repeated sequences only
      sequence_saving_ns += s.gap_ns;
      if (sequence_evidence.size() < 5)
        sequence_evidence.push_back({{"op", s.op},
                                     {"kernels", s.kernels},
                                     {"count", s.count},
                                     {"gpu_ns", s.gpu_ns},
                                     {"estimated_saving_ns", s.gap_ns}});
    }
    std::vector<store::Finding> out;
    for (auto& [device, d] : devices) {
      auto span = data.device_span(device).value_or(Interval{});
      std::sort(d.windows.begin(), d.windows.end(),
                [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
      const Interval window{d.windows.front().begin, d.windows.back().end};
      json evidence = {{"run_count", d.runs},
                       {"kernel_count", d.kernels},
                       {"gap_total_ns", d.gap_ns},
                       {"longest_runs", windows_json(longest(d.windows, 10), 10)},
                       {"top_offenders", offenders_json(data, d.by_name, 10)},
                       {"frequent_sequences", sequence_evidence},
                       {"frequent_sequences_saving_ns", sequence_saving_ns}};
      // The worst instance is the longest run: its kernels, and the run as the focus.
      const Interval worst{g.start[d.longest_run.front()], g.end[d.longest_run.back()]};
      add_offending_gpu_events(evidence, data, std::move(d.longest_run));
      add_focus(evidence, worst);
      std::string sequence_text;
      if (!sequence_evidence.empty())
        sequence_text = " The most expensive repeated sequence runs " +
                        std::to_string(sequence_evidence[0]["count"].get<int64_t>()) +
                        " times under " + sequence_evidence[0]["op"].get<std::string>() + " (" +
                        std::to_string(sequence_evidence[0]["kernels"].size()) +
                        " kernels; fusing it saves at least " +
                        ms(sequence_evidence[0]["estimated_saving_ns"].get<int64_t>()) + ").";
      std::string advice =
          std::to_string(d.runs) + " run(s) of " + std::to_string(min_run) +
          "+ consecutive kernels shorter than " + ms(max_ns) + " on GPU " + std::to_string(device) +
          " (" + std::to_string(d.kernels) + " kernels, " + ms(d.gap_ns) +
          " of gaps between them). Fuse them: torch.compile, fused optimizers "
          "(foreach/fused=True), "
          "fused layers (apex/TE LayerNorm, fused bias+activation), or capture the sequence in a "
          "CUDA graph." +
          sequence_text;
      out.push_back(make_finding(*this, context, device, window, d.gap_ns, span.length(),
                                 std::move(evidence), std::move(advice)));
    }
    return out;
  }
};

// ---------------------------------------------------------------------------------------------
class ExposedTransfers : public Rule {
 public:
  CaptureParts reads() const override { return gpu_events_only(); }
  std::string id() const override { return "exposed_transfers"; }
  std::string title() const override {
    return "Memory copies not overlapped by any kernel on their device";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"max_exposed_share", 0.05,
             "fleetscope: HTA memory-copy/compute overlap reports the share without a limit; "
             "above 5 % of the device span"}};
  }
  std::vector<std::string> unmet_needs(const AnalysisContext& context) const override {
    const DataInventory& inv = context.inventory();
    return Needs().require(inv.gpu_events() > 0, needs::gpu_activity);
  }
  std::vector<store::Finding> evaluate(const AnalysisContext& context) const override {
    const double max_share = threshold(context, "max_exposed_share");
    const CaptureData& data = context.data();
    const auto& g = data.gpu;
    std::vector<store::Finding> out;
    for (const auto& [device, indexes] : data.events_by_device) {
      SortedUnion copies, kernels;  // united as read: `indexes` are in start order
      std::unordered_map<int64_t, Offender> by_name;
      for (uint32_t i : indexes) {
        if (g.kind[i] == GpuEventKind::kernel) kernels.add({g.start[i], g.end[i]});
        if (g.kind[i] != GpuEventKind::memcpy) continue;
        copies.add({g.start[i], g.end[i]});
        Offender& o = by_name[g.name_id[i]];
        o.name_id = g.name_id[i], ++o.count, o.total_ns += g.duration(i);
      }
      auto span = data.device_span(device);
      if (by_name.empty() || !span || span->length() <= 0) continue;
      const IntervalSet copy_set = copies.take();
      const IntervalSet exposed = subtract(copy_set, kernels.take());
      const int64_t exposed_ns = total_length(exposed);
      const double share = double(exposed_ns) / double(span->length());
      if (share <= max_share) continue;
      json evidence = {{"memcpy_ns", total_length(copy_set)},
                       {"exposed_ns", exposed_ns},
                       {"exposed_share", share},
                       {"longest_exposed", windows_json(longest(exposed, 10), 10)},
                       {"top_offenders", offenders_json(data, by_name, 10)}};
      // The copies that run (in part) while no kernel does; the focus is the longest such stretch.
      std::vector<uint32_t> exposed_copies;
      for (uint32_t i : indexes)
        if (g.kind[i] == GpuEventKind::memcpy &&
            covered_length(exposed, {g.start[i], g.end[i]}) > 0)
          exposed_copies.push_back(i);
      add_offending_gpu_events(evidence, data, std::move(exposed_copies));
      if (!exposed.empty()) add_focus(evidence, longest(exposed, 1).front());
      std::string advice =
          ms(exposed_ns) + " of memory copies on GPU " + std::to_string(device) + " (" +
          percent(share) +
          " of its span) run while no kernel does. Overlap them with compute: pinned host memory "
          "(DataLoader pin_memory=True) with .to(non_blocking=True) on a side stream, prefetch "
          "the next batch during the current step, and avoid device-to-host copies in the loop.";
      out.push_back(make_finding(*this, context, device,
                                 {exposed.front().begin, exposed.back().end}, exposed_ns,
                                 span->length(), std::move(evidence), std::move(advice)));
    }
    return out;
  }
};

// ---------------------------------------------------------------------------------------------
class LowCommOverlap : public Rule {
 public:
  CaptureParts reads() const override { return gpu_events_only(); }
  std::string id() const override { return "low_comm_overlap"; }
  std::string title() const override {
    return "Communication kernels mostly not overlapped by computation";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"min_overlap", 0.5,
             "fleetscope: HTA get_comm_comp_overlap reports the ratio without a limit; below "
             "50 %"},
            {"min_exposed_ns", 1e6, "fleetscope: ignore less than 1 ms of exposed communication"}};
  }
  std::vector<std::string> unmet_needs(const AnalysisContext& context) const override {
    const DataInventory& inv = context.inventory();
    return Needs().require(inv.kernels > 0, needs::kernels);
  }
  std::vector<store::Finding> evaluate(const AnalysisContext& context) const override {
    const double min_overlap = threshold(context, "min_overlap");
    const auto min_exposed = static_cast<int64_t>(threshold(context, "min_exposed_ns"));
    const CaptureData& data = context.data();
    std::vector<store::Finding> out;
    for (const auto& [device, indexes] : data.events_by_device) {
      const CommOverlap c = comm_overlap(data, indexes);
      if (c.comm_ns == 0 || c.overlap() >= min_overlap || c.exposed_ns < min_exposed) continue;
      json evidence = {{"comm_ns", c.comm_ns},
                       {"exposed_comm_ns", c.exposed_ns},
                       {"overlap", c.overlap()},
                       {"top_offenders", offenders_json(data, c.by_name, 10)}};
      std::string advice =
          "Only " + percent(c.overlap()) + " of communication time on GPU " +
          std::to_string(device) + " overlaps computation (" + ms(c.exposed_ns) + " of " +
          ms(c.comm_ns) +
          " exposed). Overlap gradient reduction with the backward pass: DDP with smaller "
          "buckets (bucket_cap_mb) so all-reduce starts earlier, FSDP backward/forward prefetch, "
          "and avoid synchronizing the comm stream right after each collective.";
      auto span = data.device_span(device).value_or(Interval{});
      out.push_back(make_finding(*this, context, device, span, c.exposed_ns, span.length(),
                                 std::move(evidence), std::move(advice)));
    }
    return out;
  }
};

// ---------------------------------------------------------------------------------------------
class HostBound : public Rule {
 public:
  CaptureParts reads() const override { return host_activity(); }
  std::string id() const override { return "host_bound"; }
  std::string title() const override { return "GPU waits on the CPU (host-bound steps)"; }
  std::vector<Threshold> thresholds() const override {
    return {
        {"min_idle_share", 0.5,
         "HTA idle time / PyTorch profiler advice: GPU idle above 50 % of step time"},
        {"min_cpu_cover", 0.5,
         "fleetscope: CPU ops cover most (> 50 %) of that idle time, so the host is the cause"}};
  }
  std::vector<std::string> unmet_needs(const AnalysisContext& context) const override {
    const DataInventory& inv = context.inventory();
    return Needs()
        .require(inv.gpu_events() > 0, needs::gpu_activity)
        .require(inv.cpu_ops + inv.dataloader_ops + inv.runtime_calls > 0, needs::host_activity);
  }
  std::vector<store::Finding> evaluate(const AnalysisContext& context) const override {
    const double min_idle = threshold(context, "min_idle_share");
    const double min_cover = threshold(context, "min_cpu_cover");
    const CaptureData& data = context.data();
    if (data.busy_by_device.empty()) return {};
    std::vector<Interval> window_list;
    for (const auto& it : data.iterations) window_list.push_back({it.start, it.end});
    if (window_list.empty()) {
      if (auto span = data.gpu_span()) window_list.push_back(*span);
    }
    const IntervalSet windows = unite(std::move(window_list));
    const int64_t window_ns = total_length(windows);
    if (window_ns <= 0) return {};
    IntervalSet any_busy;
    for (const auto& [device, busy] : data.busy_by_device) any_busy = unite(any_busy, busy);
    const IntervalSet idle = subtract(windows, any_busy);
    const int64_t idle_ns = total_length(idle);
    const double idle_share = double(idle_ns) / double(window_ns);
    if (idle_share <= min_idle) return {};
    std::vector<Interval> host;
    std::unordered_map<int64_t, Offender> by_name;
    for (const HostRange& r : data.cpu_ops) {
      // ProfilerStep#N ranges are the rule's own windows: counting them would make the CPU
      // "cover" every idle instant of every step.
      if (data.name(r.name_id).rfind("ProfilerStep#", 0) == 0) continue;
      host.push_back({r.start, r.end});
      Offender& o = by_name[r.name_id];
      o.name_id = r.name_id, ++o.count, o.total_ns += r.end - r.start;
    }
    for (const HostRange& r : data.dataloader_ops) host.push_back({r.start, r.end});
    for (size_t i = 0; i < data.runtime.size(); ++i)
      host.push_back({data.runtime.start[i], data.runtime.end[i]});
    const IntervalSet covered = intersect(idle, unite(std::move(host)));
    const int64_t impact = total_length(covered);
    const double cover = idle_ns > 0 ? double(impact) / double(idle_ns) : 0.0;
    if (cover <= min_cover) return {};
    json evidence = {{"window_ns", window_ns},
                     {"gpu_idle_ns", idle_ns},
                     {"gpu_idle_share", idle_share},
                     {"idle_covered_by_cpu_ns", impact},
                     {"cpu_cover_share", cover},
                     {"steps", data.iterations.size()},
                     {"longest_idle_windows", windows_json(longest(covered, 10), 10)},
                     {"top_offenders", offenders_json(data, by_name, 10)}};
    std::string advice =
        "The GPU is idle " + percent(idle_share) + " of " +
        (data.iterations.empty() ? std::string("the capture") : std::string("step time")) +
        " and the CPU is busy during " + percent(cover) + " of that idle time (" + ms(impact) +
        "): the host cannot feed the GPU. Cut per-step Python/CPU work: capture the step with "
        "CUDA graphs (torch.compile(mode='reduce-overhead')), fuse small ops (torch.compile), "
        "raise the batch size, move preprocessing to DataLoader workers, and avoid .item()/"
        "host round-trips inside the step.";
    return {make_finding(*this, context, std::nullopt, {windows.front().begin, windows.back().end},
                         impact, window_ns, std::move(evidence), std::move(advice))};
  }
};

// Kernels selected by a per-kernel predicate on launch shape, taking more than a share of a
// device's kernel time. Shared by few_blocks and low_occupancy.
struct ShapeShare {
  int64_t kernel_ns = 0, flagged_ns = 0;
  IntervalSet flagged;
  std::vector<uint32_t> flagged_events;
  std::unordered_map<int64_t, Offender> by_name;
};
template <class Pred>
ShapeShare shape_share(const CaptureData& data, const std::vector<uint32_t>& indexes, Pred pred) {
  const auto& g = data.gpu;
  ShapeShare out;
  SortedUnion kernels, flagged;  // united as read: `indexes` are in start order
  for (uint32_t i : indexes) {
    if (g.kind[i] != GpuEventKind::kernel) continue;
    kernels.add({g.start[i], g.end[i]});
    if (!pred(i)) continue;
    flagged.add({g.start[i], g.end[i]});
    out.flagged_events.push_back(i);
    Offender& o = out.by_name[g.name_id[i]];
    o.name_id = g.name_id[i], ++o.count, o.total_ns += g.duration(i);
  }
  out.kernel_ns = total_length(kernels.take());
  out.flagged = flagged.take();
  out.flagged_ns = total_length(out.flagged);
  return out;
}

// ---------------------------------------------------------------------------------------------
class FewBlocks : public Rule {
 public:
  CaptureParts reads() const override { return gpu_events_only(); }
  std::string id() const override { return "few_blocks"; }
  std::string title() const override { return "Kernels launch fewer blocks than the GPU has SMs"; }
  std::vector<Threshold> thresholds() const override {
    return {{"max_share", 0.1,
             "nsys / Nsight Compute 'grid too small' advice (grid blocks < SM count); "
             "fleetscope: such kernels above 10 % of kernel time"}};
  }
  std::vector<std::string> unmet_needs(const AnalysisContext& context) const override {
    const DataInventory& inv = context.inventory();
    return Needs()
        .require(inv.kernels > 0, needs::kernels)
        .require(inv.kernels == 0 || inv.kernels_with_grid > 0, needs::grid)
        .require(inv.gpus_with_sm_count > 0, needs::sm_count);
  }
  std::vector<store::Finding> evaluate(const AnalysisContext& context) const override {
    const double max_share = threshold(context, "max_share");
    const CaptureData& data = context.data();
    const auto& g = data.gpu;
    if (g.grid_blocks.size() != g.size()) return {};
    std::vector<store::Finding> out;
    for (const auto& [device, indexes] : data.events_by_device) {
      int64_t sm_count = 0;
      for (const auto& gpu : data.gpus)
        if (gpu.id == device && gpu.smCount) sm_count = *gpu.smCount;
      if (sm_count <= 0) continue;
      ShapeShare s = shape_share(data, indexes, [&](uint32_t i) {
        return g.grid_blocks[i] > 0 && g.grid_blocks[i] < sm_count;
      });
      if (s.flagged_ns <= 0 || s.kernel_ns <= 0) continue;
      const double share = double(s.flagged_ns) / double(s.kernel_ns);
      if (share <= max_share) continue;
      json evidence = {{"sm_count", sm_count},
                       {"few_block_kernel_ns", s.flagged_ns},
                       {"kernel_busy_ns", s.kernel_ns},
                       {"few_block_share", share},
                       {"top_offenders", offenders_json(data, s.by_name, 10)}};
      add_offending_gpu_events(evidence, data, std::move(s.flagged_events));
      std::string advice =
          "Kernels with fewer grid blocks than GPU " + std::to_string(device) + "'s " +
          std::to_string(sm_count) + " SMs take " + percent(share) + " of its kernel time (" +
          ms(s.flagged_ns) +
          "), leaving SMs empty. Give each launch more parallel work: raise the batch size, batch "
          "small ops together (torch.compile / horizontal fusion, torch._foreach_*), or split "
          "the reduction dimension (split-K). Impact is the kernels' time (upper bound).";
      out.push_back(make_finding(*this, context, device,
                                 {s.flagged.front().begin, s.flagged.back().end}, s.flagged_ns,
                                 s.kernel_ns, std::move(evidence), std::move(advice)));
    }
    return out;
  }
};

// ---------------------------------------------------------------------------------------------
class LowOccupancy : public Rule {
 public:
  CaptureParts reads() const override { return gpu_events_only(); }
  std::string id() const override { return "low_occupancy"; }
  std::string title() const override { return "Kernels run at low estimated occupancy"; }
  std::vector<Threshold> thresholds() const override {
    return {{"max_occupancy_percent", 25,
             "PyTorch profiler (TensorBoard plugin) est. achieved occupancy; fleetscope: below "
             "25 %"},
            {"max_share", 0.1, "fleetscope: such kernels above 10 % of kernel time"}};
  }
  std::vector<std::string> unmet_needs(const AnalysisContext& context) const override {
    const DataInventory& inv = context.inventory();
    return Needs()
        .require(inv.kernels > 0, needs::kernels)
        .require(inv.kernels == 0 || inv.kernels_with_occupancy > 0, needs::occupancy);
  }
  std::vector<store::Finding> evaluate(const AnalysisContext& context) const override {
    const double max_occ = threshold(context, "max_occupancy_percent");
    const double max_share = threshold(context, "max_share");
    const CaptureData& data = context.data();
    const auto& g = data.gpu;
    if (g.est_occupancy.size() != g.size()) return {};
    std::vector<store::Finding> out;
    for (const auto& [device, indexes] : data.events_by_device) {
      ShapeShare s = shape_share(data, indexes, [&](uint32_t i) {
        return !std::isnan(g.est_occupancy[i]) && g.est_occupancy[i] < max_occ;
      });
      if (s.flagged_ns <= 0 || s.kernel_ns <= 0) continue;
      const double share = double(s.flagged_ns) / double(s.kernel_ns);
      if (share <= max_share) continue;
      json evidence = {{"low_occupancy_kernel_ns", s.flagged_ns},
                       {"kernel_busy_ns", s.kernel_ns},
                       {"low_occupancy_share", share},
                       {"top_offenders", offenders_json(data, s.by_name, 10)}};
      add_offending_gpu_events(evidence, data, std::move(s.flagged_events));
      std::string advice =
          "Kernels with estimated occupancy below " + std::to_string(int(max_occ)) + " % take " +
          percent(share) + " of GPU " + std::to_string(device) + "'s kernel time (" +
          ms(s.flagged_ns) +
          "). Check them in Nsight Compute: too few blocks (raise the batch size), too many "
          "registers or shared memory per thread (__launch_bounds__, smaller tiles, "
          "torch.compile autotuning). Impact is the kernels' time (upper bound).";
      out.push_back(make_finding(*this, context, device,
                                 {s.flagged.front().begin, s.flagged.back().end}, s.flagged_ns,
                                 s.kernel_ns, std::move(evidence), std::move(advice)));
    }
    return out;
  }
};

// ---------------------------------------------------------------------------------------------
// The step-time tail (step_stats(): recorded iterations, nearest-rank quantiles). Fires when the
// median step over the p99 step falls below the straggler score of nvidia-resiliency-ext: its
// straggler detection flags a section whose performance score (reference time / measured time)
// is below 0.7 (gpu_individual_perf_threshold / gpu_relative_perf_threshold default 0.7,
// nvidia-resiliency-ext straggler_det usage guide), i.e. p99 > p50 / 0.7 ≈ 1.43 × p50. The
// median step is the reference here (NVRx's individual score uses the rank's best time, which
// would flag more). Slow steps = steps longer than p50 / ratio; for each, what it spends more
// on than the median step does: DataLoader ops, host sync calls, GPU busy time, GPU idle time.
class TailSteps : public Rule {
 public:
  CaptureParts reads() const override { return host_activity(); }
  std::string id() const override { return "tail_steps"; }
  std::string title() const override {
    return "Slow steps: the p99 step time is far above the median";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"min_median_to_p99", 0.7,
             "nvidia-resiliency-ext straggler detection: performance score (reference / "
             "measured time) below 0.7 is a straggler (gpu_individual_perf_threshold default)"},
            {"min_steps", 3, "fleetscope: with fewer steps there is no tail to speak of"}};
  }
  std::vector<std::string> unmet_needs(const AnalysisContext& context) const override {
    const DataInventory& inv = context.inventory();
    return Needs()
        .require(inv.gpu_events() > 0, needs::gpu_activity)
        .require(inv.iterations > 0, needs::steps);
  }

  struct StepParts {
    int64_t dataloader_ns = 0, sync_ns = 0, gpu_busy_ns = 0, gpu_idle_ns = 0;
  };

  std::vector<store::Finding> evaluate(const AnalysisContext& context) const override {
    const double ratio = threshold(context, "min_median_to_p99");
    const CaptureData& data = context.data();
    const StepStats stats = step_stats(data);
    if (stats.count < static_cast<int64_t>(threshold(context, "min_steps")) || stats.p99_ns <= 0)
      return {};
    const double median_to_p99 = double(stats.median_ns) / double(stats.p99_ns);
    if (median_to_p99 >= ratio) return {};

    const IntervalSet loading = [&] {
      std::vector<Interval> v;
      for (const HostRange& r : data.dataloader_ops) v.push_back({r.start, r.end});
      return unite(std::move(v));
    }();
    const IntervalSet syncing = [&] {
      std::vector<Interval> v;
      const auto& rt = data.runtime;
      for (size_t i = 0; i < rt.size(); ++i)
        if (data.name(rt.name_id[i]).find("Synchronize") != std::string::npos)
          v.push_back({rt.start[i], rt.end[i]});
      return unite(std::move(v));
    }();
    IntervalSet any_busy;
    for (const auto& [device, busy] : data.busy_by_device) any_busy = unite(any_busy, busy);
    auto parts_of = [&](Interval w) {
      StepParts p;
      const IntervalSet step{w};
      p.dataloader_ns = total_length(intersect(loading, step));
      p.sync_ns = total_length(intersect(syncing, step));
      p.gpu_busy_ns = total_length(intersect(any_busy, step));
      p.gpu_idle_ns = w.length() - p.gpu_busy_ns;
      return p;
    };
    // The median step: the recorded iteration whose duration is the median.
    const store::Iteration* median_step = nullptr;
    for (const auto& it : data.iterations)
      if (it.end - it.start == stats.median_ns) median_step = &it;
    const StepParts typical =
        median_step ? parts_of({median_step->start, median_step->end}) : StepParts{};

    const double slow_cut = double(stats.median_ns) / ratio;
    json slow = json::array();
    StepParts excess;
    int64_t impact = 0, slow_count = 0;
    Interval window{INT64_MAX, INT64_MIN};
    for (const auto& it : data.iterations) {
      const int64_t d = it.end - it.start;
      if (double(d) <= slow_cut) continue;
      ++slow_count;
      impact += d - stats.median_ns;
      window = {std::min(window.begin, it.start), std::max(window.end, it.end)};
      const StepParts p = parts_of({it.start, it.end});
      excess.dataloader_ns += p.dataloader_ns - typical.dataloader_ns;
      excess.sync_ns += p.sync_ns - typical.sync_ns;
      excess.gpu_busy_ns += p.gpu_busy_ns - typical.gpu_busy_ns;
      excess.gpu_idle_ns += p.gpu_idle_ns - typical.gpu_idle_ns;
      if (slow.size() < 10)
        slow.push_back({{"step", it.step},
                        {"start_ns", it.start},
                        {"end_ns", it.end},
                        {"step_ns", d},
                        {"dataloader_ns", p.dataloader_ns},
                        {"sync_ns", p.sync_ns},
                        {"gpu_busy_ns", p.gpu_busy_ns},
                        {"gpu_idle_ns", p.gpu_idle_ns}});
    }
    if (slow_count == 0) return {};
    // What the slow steps spend their extra time on, largest first.
    std::vector<std::pair<std::string, int64_t>> causes = {
        {"DataLoader (input pipeline)", excess.dataloader_ns},
        {"host synchronization calls", excess.sync_ns},
        {"more GPU work", excess.gpu_busy_ns},
        {"GPU idle (host-bound: launches, Python, GC)", excess.gpu_idle_ns}};
    std::stable_sort(causes.begin(), causes.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    json coincides = json::array();
    for (const auto& [what, ns] : causes) coincides.push_back({{"what", what}, {"excess_ns", ns}});
    json evidence = {{"steps", stats.count},
                     {"p50_ns", stats.median_ns},
                     {"p90_ns", stats.p90_ns},
                     {"p99_ns", stats.p99_ns},
                     {"jitter", stats.jitter},
                     {"median_to_p99", median_to_p99},
                     {"slow_steps", slow_count},
                     {"slowest", std::move(slow)},
                     {"median_step", median_step ? json(median_step->step) : json(nullptr)},
                     {"coincides", std::move(coincides)}};
    std::string advice =
        std::to_string(slow_count) + " of " + std::to_string(stats.count) + " steps take over " +
        ms(int64_t(slow_cut)) + " (p99 " + ms(stats.p99_ns) + " vs median " + ms(stats.median_ns) +
        "); their extra time goes mostly to " + causes.front().first + " (" +
        ms(causes.front().second) +
        " over the median step). Remove what makes those steps slow (periodic "
        "work such as checkpointing, logging, evaluation or garbage collection in the step, "
        "uneven batches, a starving DataLoader): the whole job waits on its slowest steps.";
    int64_t total = 0;
    for (const auto& it : data.iterations) total += it.end - it.start;
    return {make_finding(*this, context, std::nullopt, window, impact, total, std::move(evidence),
                         std::move(advice))};
  }
};

}  // namespace

std::vector<std::unique_ptr<Rule>> make_builtin_rules() {
  std::vector<std::unique_ptr<Rule>> rules;
  rules.push_back(std::make_unique<GpuIdleGaps>());
  rules.push_back(std::make_unique<LowGpuUtilization>());
  rules.push_back(std::make_unique<LaunchBoundSmallKernels>());
  rules.push_back(std::make_unique<LaunchDelayOutliers>());
  rules.push_back(std::make_unique<DataLoaderBottleneck>());
  rules.push_back(std::make_unique<PageableMemcpy>());
  rules.push_back(std::make_unique<SynchronousMemoryCall>(false));
  rules.push_back(std::make_unique<SynchronousMemoryCall>(true));
  rules.push_back(std::make_unique<ExcessiveSync>());
  rules.push_back(std::make_unique<MemoryNearCapacity>());
  rules.push_back(std::make_unique<ConsolidationCandidateRule>());
  rules.push_back(std::make_unique<CommHeavy>());
  rules.push_back(std::make_unique<TensorCoresUnused>());
  rules.push_back(std::make_unique<FusionCandidates>());
  rules.push_back(std::make_unique<ExposedTransfers>());
  rules.push_back(std::make_unique<LowCommOverlap>());
  rules.push_back(std::make_unique<HostBound>());
  rules.push_back(std::make_unique<FewBlocks>());
  rules.push_back(std::make_unique<LowOccupancy>());
  rules.push_back(std::make_unique<TailSteps>());
  return rules;
}

}  // namespace fleetscope::analyzer
