#include "fleetscope/analyzer/queue_length.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "fleetscope/analyzer/describe.h"
#include "fleetscope/analyzer/metrics.h"

namespace fleetscope::analyzer {

const std::vector<std::string> kQueueLaunchApis = {
    "cudaMemsetAsync",
    "cudaMemcpyAsync",
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "cuLaunchKernel",
    "runFunction - job_prep_and_submit_for_execution",  // MTIA
    "hipLaunchKernel",
    "hipExtModuleLaunchKernel",
    "hipMemcpyAsync",
    "hipMemsetAsync",
    "hipMemcpyWithStream",
};

namespace {

struct Change {
  int64_t time;
  int delta;
  int64_t gpu_event;
};

}  // namespace

std::vector<QueueLengthSeries> queue_length_time_series(const CaptureData& data,
                                                        bool hta_last_step_filter) {
  std::unordered_map<int64_t, bool> is_launch;  // name id -> launch API?
  for (const auto& api : kQueueLaunchApis)
    if (auto id = data.find_name(api)) is_launch[*id] = true;
  const HtaStepFilter filter = HtaStepFilter::for_capture(data, hta_last_step_filter);
  const auto& g = data.gpu;
  const auto& r = data.runtime;
  std::map<std::pair<int32_t, int32_t>, std::vector<Change>> changes;
  for (size_t i = 0; i < g.size(); ++i) {
    const int64_t call = data.launch_call_of[i];
    if (call < 0 || !is_launch.count(r.name_id[call]) || !filter.keeps_gpu_event(data, i)) continue;
    auto& list = changes[{g.device[i], g.stream[i]}];
    list.push_back({r.start[call], +1, static_cast<int64_t>(i)});
    list.push_back({g.start[i], -1, static_cast<int64_t>(i)});
  }
  std::vector<QueueLengthSeries> out;
  for (auto& [key, list] : changes) {
    std::stable_sort(list.begin(), list.end(), [](const Change& a, const Change& b) {
      return a.time != b.time ? a.time < b.time : a.delta > b.delta;
    });
    QueueLengthSeries series;
    series.device = key.first;
    series.stream = key.second;
    series.points.reserve(list.size());
    int64_t running = 0;
    for (const Change& c : list) {
      running += c.delta;
      series.points.push_back({c.time, running, c.gpu_event, c.delta > 0});
    }
    out.push_back(std::move(series));
  }
  return out;
}

QueueLengthSummary summarize(const QueueLengthSeries& series) {
  QueueLengthSummary s;
  s.device = series.device;
  s.stream = series.stream;
  const auto& p = series.points;
  s.count = static_cast<int64_t>(p.size());
  if (p.empty()) return s;
  std::vector<double> values;
  values.reserve(p.size());
  for (const QueuePoint& q : p) values.push_back(double(q.queue_length));
  const Describe d = describe(std::move(values));
  s.mean = d.mean, s.std = d.std, s.min = d.min, s.max = d.max;
  s.p25 = d.p25, s.p50 = d.p50, s.p75 = d.p75;
  const int64_t span = p.back().time_ns - p.front().time_ns;
  if (span > 0) {
    double weighted = 0;
    for (size_t k = 0; k + 1 < p.size(); ++k)
      weighted += double(p[k].queue_length) * double(p[k + 1].time_ns - p[k].time_ns);
    s.time_weighted_mean = weighted / double(span);
  }
  return s;
}

std::vector<QueueLengthSummary> queue_length_summary(const CaptureData& data,
                                                     bool hta_last_step_filter) {
  std::vector<QueueLengthSummary> out;
  for (const auto& series : queue_length_time_series(data, hta_last_step_filter))
    out.push_back(summarize(series));
  return out;
}

std::vector<BlockedOnFullQueue> time_blocked_on_full_queue(
    const std::vector<QueueLengthSeries>& series, int64_t max_queue_length) {
  std::vector<BlockedOnFullQueue> out;
  for (const QueueLengthSeries& s : series) {
    int64_t blocked = 0;
    bool reached = false;
    for (size_t k = 0; k < s.points.size(); ++k) {
      if (s.points[k].queue_length < max_queue_length) continue;
      reached = true;
      if (k + 1 < s.points.size()) blocked += s.points[k + 1].time_ns - s.points[k].time_ns;
    }
    if (reached) out.push_back({s.device, s.stream, blocked});
  }
  return out;
}

}  // namespace fleetscope::analyzer
