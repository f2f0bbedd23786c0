#include "fleetscope/analyzer/multi_rank.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "fleetscope/analyzer/rules.h"

namespace fleetscope::analyzer {

namespace {

using nlohmann::json;

// A rank's ProfilerStep iterations that HTA keeps (all but the last when there are two or more).
std::vector<const store::Iteration*> kept_steps(const CaptureData& data) {
  const HtaStepFilter filter = HtaStepFilter::for_capture(data);
  std::vector<const store::Iteration*> out;
  for (const auto& it : data.iterations)
    if (it.source == "ProfilerStep" && (!filter.active || it.start < filter.last_step_start))
      out.push_back(&it);
  return out;
}

// The kept step containing `t` (start <= t < end), or nullptr.
const store::Iteration* step_at(const std::vector<const store::Iteration*>& steps, int64_t t) {
  for (const store::Iteration* s : steps)
    if (s->start <= t && t < s->end) return s;
  return nullptr;
}

// The step of GPU event i: the step containing its launching call's start.
const store::Iteration* gpu_step(const CaptureData& data,
                                 const std::vector<const store::Iteration*>& steps, size_t i) {
  const int64_t call = data.launch_call_of[i];
  return call < 0 ? nullptr : step_at(steps, data.runtime.start[call]);
}

double sample_std(const std::vector<double>& v) {
  if (v.size() < 2) return std::numeric_limits<double>::quiet_NaN();
  double mean = 0;
  for (double x : v) mean += x;
  mean /= double(v.size());
  double squares = 0;
  for (double x : v) squares += (x - mean) * (x - mean);
  return std::sqrt(squares / double(v.size() - 1));
}

IntervalSet dataloader_set(const CaptureData& data) {
  std::vector<Interval> v;
  for (const HostRange& r : data.dataloader_ops) v.push_back({r.start, r.end});
  return unite(std::move(v));
}

IntervalSet all_busy(const CaptureData& data) {
  IntervalSet any;
  for (const auto& [device, busy] : data.busy_by_device) any = unite(any, busy);
  return any;
}

IntervalSet compute_busy(const CaptureData& data) {
  std::vector<Interval> v;
  for (size_t i = 0; i < data.gpu.size(); ++i)
    if (data.gpu.work_class[i] == WorkClass::computation)
      v.push_back({data.gpu.start[i], data.gpu.end[i]});
  return unite(std::move(v));
}

}  // namespace

std::optional<int32_t> capture_rank(const CaptureData& data) {
  for (const auto& p : data.processes)
    if (p.rank) return p.rank;
  return std::nullopt;
}

std::vector<RankSummary> rank_summaries(const std::vector<RankInput>& ranks) {
  std::vector<RankSummary> out;
  for (const RankInput& r : ranks) {
    const CaptureData& data = *r.data;
    RankSummary s;
    s.rank = r.rank;
    s.source = r.source;
    s.steps = step_stats(data);
    for (const TemporalBreakdown& t : temporal_breakdown(data)) {
      s.span_ns += t.span_ns, s.compute_ns += t.compute_ns;
      s.non_compute_ns += t.non_compute_ns, s.idle_ns += t.idle_ns;
    }
    std::map<int32_t, std::vector<Interval>> comm;
    for (size_t i = 0; i < data.gpu.size(); ++i)
      if (data.gpu.work_class[i] == WorkClass::communication)
        comm[data.gpu.device[i]].push_back({data.gpu.start[i], data.gpu.end[i]});
    for (auto& [device, list] : comm) s.communication_ns += total_length(unite(std::move(list)));
    std::vector<Interval> steps;
    for (const auto& it : data.iterations) steps.push_back({it.start, it.end});
    s.dataloader_ns = total_length(intersect(dataloader_set(data), unite(std::move(steps))));
    out.push_back(std::move(s));
  }
  return out;
}

StragglerAnalysis potential_stragglers(const std::vector<RankInput>& ranks,
                                       const StragglerOptions& options) {
  StragglerAnalysis out;
  if (ranks.size() < 2) {
    out.not_computed = "two or more ranks of one job";
    return out;
  }
  // 1-2: kept iterations, the events' extent, mean iteration time.
  std::set<int64_t> iterations;
  int64_t first = INT64_MAX, last = INT64_MIN;
  std::vector<std::vector<const store::Iteration*>> steps_of(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    const CaptureData& data = *ranks[r].data;
    steps_of[r] = kept_steps(data);
    const auto& steps = steps_of[r];
    auto extend = [&](int64_t start, int64_t end) {
      first = std::min(first, start), last = std::max(last, end);
    };
    for (const store::Iteration* s : steps) iterations.insert(s->step), extend(s->start, s->end);
    for (const HostRange& op : data.cpu_ops)
      if (step_at(steps, op.start)) extend(op.start, op.end);
    for (size_t i = 0; i < data.runtime.size(); ++i)
      if (step_at(steps, data.runtime.start[i])) extend(data.runtime.start[i], data.runtime.end[i]);
    for (size_t i = 0; i < data.gpu.size(); ++i)
      if (gpu_step(data, steps, i)) extend(data.gpu.start[i], data.gpu.end[i]);
  }
  if (iterations.empty()) {
    out.not_computed = "ProfilerStep iterations in every rank";
    return out;
  }
  out.iterations.assign(iterations.begin(), iterations.end());
  out.earliest_start_ns = first;
  out.mean_iter_time_ns = double(last - first) / double(iterations.size());
  const double min_duration = options.min_normalized_duration * out.mean_iter_time_ns;

  // 3: the last long communication kernel per (rank, stream, iteration, name).
  std::map<std::tuple<int32_t, int32_t, int64_t, std::string>, StragglerMetricRow> last_kernel;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const CaptureData& data = *ranks[r].data;
    const HtaStepFilter filter = HtaStepFilter::for_capture(data);
    const auto& g = data.gpu;
    for (size_t i = 0; i < g.size(); ++i) {
      if (g.kind[i] != GpuEventKind::kernel || g.stream[i] <= 0) continue;
      if (double(g.duration(i)) < min_duration || !filter.keeps_gpu_event(data, i)) continue;
      const std::string& name = data.name(g.name_id[i]);
      if (name.rfind("ncclKernel", 0) != 0) continue;
      const store::Iteration* step = gpu_step(data, steps_of[r], i);
      if (!step || step->step <= 0) continue;
      StragglerMetricRow row{ranks[r].rank, g.stream[i],   step->step, name,
                             g.start[i],    g.duration(i), 0.0};
      auto [it, fresh] = last_kernel.try_emplace({row.rank, row.stream, row.iteration, name}, row);
      if (!fresh && row.start_ns >= it->second.start_ns) it->second = row;
    }
  }
  // 4: the (stream, name) with the largest mean spread of normalized duration across ranks.
  std::map<std::tuple<int32_t, std::string, int64_t>, std::vector<double>> durations;
  for (auto& [key, row] : last_kernel) {
    row.normalized_start_time = double(row.start_ns - first) / out.mean_iter_time_ns;
    durations[{row.stream, row.kernel, row.iteration}].push_back(double(row.duration_ns) /
                                                                 out.mean_iter_time_ns);
  }
  std::map<std::pair<int32_t, std::string>, std::pair<double, int>> spread;  // sum, count
  for (const auto& [key, values] : durations) {
    const double s = sample_std(values);
    if (std::isnan(s)) continue;
    auto& [sum, n] = spread[{std::get<0>(key), std::get<1>(key)}];
    sum += s, ++n;
  }
  if (spread.empty()) {
    out.not_computed =
        "a long NCCL kernel (ncclKernel*, >= 1 % of the mean iteration) in two or more ranks";
    return out;
  }
  auto best = spread.begin();
  for (auto it = spread.begin(); it != spread.end(); ++it)
    if (it->second.first / it->second.second > best->second.first / best->second.second) best = it;
  const auto [stream, kernel] = best->first;
  for (const auto& [key, row] : last_kernel)
    if (row.stream == stream && row.kernel == kernel) out.metric.push_back(row);

  // 5: per iteration, the ranks at or after the k-th latest start; ranks by count.
  const int k = std::max(1, options.num_candidates);
  std::map<int64_t, std::vector<const StragglerMetricRow*>> by_iteration;
  for (const auto& row : out.metric) by_iteration[row.iteration].push_back(&row);
  std::map<int32_t, int> count;
  for (const auto& row : out.metric) count[row.rank] += 0;
  for (auto& [iteration, rows] : by_iteration) {
    std::vector<double> starts;
    for (const auto* row : rows) starts.push_back(row->normalized_start_time);
    std::sort(starts.rbegin(), starts.rend());
    const double threshold = starts[std::min<size_t>(size_t(k), starts.size()) - 1];
    for (const auto* row : rows)
      if (row->normalized_start_time >= threshold) ++count[row->rank];
  }
  std::vector<std::pair<int32_t, int>> ranked(count.begin(), count.end());
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (size_t i = 0; i < ranked.size() && i < size_t(k); ++i)
    out.stragglers.push_back(ranked[i].first);
  return out;
}

std::optional<store::Finding> rank_straggler_finding(const std::vector<RankInput>& ranks,
                                                     const std::vector<RankSummary>& summaries,
                                                     const StragglerAnalysis& stragglers,
                                                     double relative_threshold) {
  if (stragglers.metric.empty()) return std::nullopt;
  // Per rank: Σ over iterations of (metric kernel start − the rank's step start), the time
  // the rank needs before it reaches the collective.
  struct Reach {
    int64_t ns = 0;
    std::vector<Interval> windows;
  };
  std::map<int32_t, Reach> reach;
  for (const auto& row : stragglers.metric) {
    const RankInput* input = nullptr;
    for (const auto& r : ranks)
      if (r.rank == row.rank) input = &r;
    if (!input) continue;
    for (const auto& it : input->data->iterations)
      if (it.step == row.iteration && it.source == "ProfilerStep" && it.start <= row.start_ns) {
        reach[row.rank].ns += row.start_ns - it.start;
        reach[row.rank].windows.push_back({it.start, row.start_ns});
      }
  }
  if (reach.size() < 2) return std::nullopt;
  auto fastest = reach.begin(), slowest = reach.begin();
  for (auto it = reach.begin(); it != reach.end(); ++it) {
    if (it->second.ns < fastest->second.ns) fastest = it;
    if (it->second.ns > slowest->second.ns) slowest = it;
  }
  if (slowest->second.ns <= 0) return std::nullopt;
  const double score = double(fastest->second.ns) / double(slowest->second.ns);
  if (score >= relative_threshold) return std::nullopt;

  // What the slow rank spends its extra time on, before the collective, against the fastest.
  auto parts = [&](int32_t rank, const std::vector<Interval>& windows) {
    const CaptureData* data = nullptr;
    for (const auto& r : ranks)
      if (r.rank == rank) data = r.data;
    const IntervalSet w = unite(windows);
    const int64_t length = total_length(w);
    const int64_t compute = total_length(intersect(compute_busy(*data), w));
    const int64_t busy = total_length(intersect(all_busy(*data), w));
    const int64_t loading = total_length(intersect(dataloader_set(*data), w));
    return std::array<int64_t, 4>{compute, busy - compute, loading, length - busy};
  };
  const auto slow = parts(slowest->first, slowest->second.windows);
  const auto fast = parts(fastest->first, fastest->second.windows);
  const std::array<const char*, 4> what = {"more GPU compute",
                                           "more other GPU work (copies, "
                                           "communication)",
                                           "DataLoader (input pipeline)",
                                           "GPU idle (host-bound: launches, Python, CPU work)"};
  json why = json::array();
  size_t top = 0;
  for (size_t k = 0; k < what.size(); ++k) {
    why.push_back({{"what", what[k]},
                   {"slow_rank_ns", slow[k]},
                   {"fastest_rank_ns", fast[k]},
                   {"excess_ns", slow[k] - fast[k]}});
    if (slow[k] - fast[k] > slow[top] - fast[top]) top = k;
  }
  const int64_t late_ns = slowest->second.ns - fastest->second.ns;
  json per_rank = json::array();
  for (const RankSummary& s : summaries)
    per_rank.push_back({{"rank", s.rank},
                        {"source", s.source},
                        {"step_p50_ns", s.steps.median_ns},
                        {"compute_ns", s.compute_ns},
                        {"communication_ns", s.communication_ns},
                        {"idle_ns", s.idle_ns},
                        {"dataloader_ns", s.dataloader_ns},
                        {"time_to_collective_ns",
                         reach.count(s.rank) ? json(reach.at(s.rank).ns) : json(nullptr)}});
  json evidence = {{"slow_rank", slowest->first},
                   {"fastest_rank", fastest->first},
                   {"relative_score", score},
                   {"hta_potential_stragglers", stragglers.stragglers},
                   {"collective", stragglers.metric.front().kernel},
                   {"stream", stragglers.metric.front().stream},
                   {"iterations", stragglers.iterations},
                   {"late_ns", late_ns},
                   {"why", std::move(why)},
                   {"ranks", std::move(per_rank)},
                   {"thresholds", {{"relative_score", relative_threshold}}}};
  const CaptureData* slow_data = nullptr;
  for (const auto& r : ranks)
    if (r.rank == slowest->first) slow_data = r.data;
  store::Finding f;
  f.captureId = slow_data->capture.id;
  f.rule = "rank_straggler";
  int64_t denominator = 0;
  for (const Interval& w : slowest->second.windows) denominator += w.length();
  f.severity = severity_for(late_ns, denominator);
  f.window_start = slowest->second.windows.front().begin;
  f.window_end = slowest->second.windows.back().end;
  f.impact_ns = late_ns;
  f.evidence_json = evidence.dump(-1, ' ', false, json::error_handler_t::replace);
  auto ms = [](int64_t ns) { return std::to_string(ns / 1'000'000) + " ms"; };
  f.recommendation =
      "Rank " + std::to_string(slowest->first) + " reaches the collective " + ms(late_ns) +
      " after rank " + std::to_string(fastest->first) + " (" + std::to_string(int(score * 100)) +
      " % of its pace), so every rank waits for it; before the collective it spends the extra "
      "time on " +
      what[top] +
      ". Balance the work or the input per rank, or look at that "
      "host/GPU (clocks, thermal throttling, a noisy neighbour).";
  f.created_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
  return f;
}

MultiRankResult analyze_ranks(const std::vector<RankInput>& ranks) {
  MultiRankResult out;
  out.summaries = rank_summaries(ranks);
  out.stragglers = potential_stragglers(ranks);
  out.finding = rank_straggler_finding(ranks, out.summaries, out.stragglers);
  return out;
}

json multi_rank_json(const MultiRankResult& result) {
  json ranks = json::array();
  for (const RankSummary& s : result.summaries)
    ranks.push_back({{"rank", s.rank},
                     {"source", s.source},
                     {"steps", s.steps.count},
                     {"step_p50_ns", s.steps.median_ns},
                     {"step_p90_ns", s.steps.p90_ns},
                     {"step_p99_ns", s.steps.p99_ns},
                     {"step_jitter", s.steps.jitter},
                     {"span_ns", s.span_ns},
                     {"compute_ns", s.compute_ns},
                     {"non_compute_ns", s.non_compute_ns},
                     {"idle_ns", s.idle_ns},
                     {"communication_ns", s.communication_ns},
                     {"dataloader_ns", s.dataloader_ns}});
  const StragglerAnalysis& st = result.stragglers;
  json metric = json::array();
  for (const auto& m : st.metric)
    metric.push_back({{"rank", m.rank},
                      {"stream", m.stream},
                      {"iteration", m.iteration},
                      {"kernel", m.kernel},
                      {"start_ns", m.start_ns},
                      {"duration_ns", m.duration_ns},
                      {"normalized_start_time", m.normalized_start_time}});
  json stragglers = {{"potential_stragglers", st.stragglers},
                     {"iterations", st.iterations},
                     {"mean_iter_time_ns", st.mean_iter_time_ns},
                     {"metric", std::move(metric)}};
  if (!st.not_computed.empty()) stragglers["needs"] = st.not_computed;
  json findings = json::array();
  if (const auto& f = result.finding)
    findings.push_back({{"rule", f->rule},
                        {"severity", f->severity},
                        {"impact_ns", f->impact_ns},
                        {"window_start_ns", f->window_start.value_or(0)},
                        {"window_end_ns", f->window_end.value_or(0)},
                        {"evidence", json::parse(f->evidence_json)},
                        {"recommendation", f->recommendation}});
  return {{"ranks", std::move(ranks)},
          {"stragglers", std::move(stragglers)},
          {"findings", std::move(findings)}};
}

std::vector<std::string> multi_rank_lines(const MultiRankResult& result) {
  auto ms = [](double ns) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f ms", ns / 1e6);
    return std::string(text);
  };
  std::vector<std::string> lines;
  for (const RankSummary& s : result.summaries)
    lines.push_back("rank " + std::to_string(s.rank) + " (" + s.source +
                    "): " + std::to_string(s.steps.count) + " steps, median " +
                    ms(double(s.steps.median_ns)) + ", p99 " + ms(double(s.steps.p99_ns)) +
                    "; compute " + ms(double(s.compute_ns)) + ", communication " +
                    ms(double(s.communication_ns)) + ", idle " + ms(double(s.idle_ns)));
  const StragglerAnalysis& st = result.stragglers;
  if (!st.not_computed.empty()) {
    lines.push_back("potential stragglers: not computed, needs " + st.not_computed);
  } else {
    std::string list;
    for (int32_t r : st.stragglers) list += (list.empty() ? "" : ", ") + std::to_string(r);
    lines.push_back("potential stragglers (HTA, late start of " +
                    st.metric.front().kernel.substr(0, st.metric.front().kernel.find('(')) +
                    "): " + list);
  }
  if (result.finding)
    lines.push_back("rank_straggler [" + result.finding->severity +
                    "]: " + result.finding->recommendation);
  else
    lines.push_back("rank_straggler: no rank is slower than 0.7 of the fastest's pace");
  return lines;
}

}  // namespace fleetscope::analyzer
