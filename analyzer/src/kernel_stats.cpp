#include "fleetscope/analyzer/kernel_stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "fleetscope/analyzer/describe.h"
#include "fleetscope/analyzer/device_metrics.h"
#include "fleetscope/analyzer/metrics.h"

namespace fleetscope::analyzer {

namespace {

const char* type_label(HtaKernelType t) {
  switch (t) {
    case HtaKernelType::computation:
      return "COMPUTATION";
    case HtaKernelType::communication:
      return "COMMUNICATION";
    case HtaKernelType::memory:
      return "MEMORY";
    case HtaKernelType::other:
      break;
  }
  return "";
}

KernelStat stat_of(std::string name, const std::vector<int64_t>& durations) {
  KernelStat s;
  s.name = std::move(name);
  s.count = static_cast<int64_t>(durations.size());
  s.min_ns = *std::min_element(durations.begin(), durations.end());
  s.max_ns = *std::max_element(durations.begin(), durations.end());
  for (int64_t d : durations) s.sum_ns += d;
  s.mean_ns = double(s.sum_ns) / double(s.count);
  double squares = 0;
  for (int64_t d : durations) squares += (double(d) - s.mean_ns) * (double(d) - s.mean_ns);
  s.std_ns = s.count > 1 ? std::sqrt(squares / double(s.count - 1)) : 0.0;
  return s;
}

// HTA _aggr_gpu_kernel_time's fold of `rows` (by sum descending): with more than `top` names,
// every name whose running sum exceeds the `duration_ratio` quantile of the running sums, and
// every name past the first `top`, goes to "others".
void fold_into_others(std::vector<KernelStat> rows, size_t top, double duration_ratio,
                      std::vector<KernelStat>& kept, int64_t& others_names,
                      int64_t& others_sum_ns) {
  if (rows.size() <= top) {
    kept = std::move(rows);
    return;
  }
  std::vector<double> running(rows.size());
  double sum = 0;
  for (size_t k = 0; k < rows.size(); ++k) running[k] = sum += double(rows[k].sum_ns);
  const double cut = linear_quantile(running, duration_ratio);  // already ascending
  for (size_t k = 0; k < rows.size(); ++k) {
    if (running[k] > cut || k >= top) {
      ++others_names, others_sum_ns += rows[k].sum_ns;
    } else {
      kept.push_back(std::move(rows[k]));
    }
  }
}

bool by_sum_then_name(const KernelStat& a, const KernelStat& b) {
  return a.sum_ns != b.sum_ns ? a.sum_ns > b.sum_ns : a.name < b.name;
}

}  // namespace

std::vector<KernelTypeStats> kernel_stats(const CaptureData& data,
                                          const KernelStatsOptions& options) {
  const HtaStepFilter filter = HtaStepFilter::for_capture(data, options.hta_last_step_filter);
  const auto& g = data.gpu;
  std::unordered_map<int64_t, HtaKernelType> type_of_name;
  // (device, type) -> name id -> durations
  std::map<std::pair<int32_t, HtaKernelType>, std::map<int64_t, std::vector<int64_t>>> groups;
  for (size_t i = 0; i < g.size(); ++i) {
    auto [it, fresh] = type_of_name.try_emplace(g.name_id[i], HtaKernelType::other);
    if (fresh) it->second = hta_kernel_type(data.name(g.name_id[i]));
    if (it->second == HtaKernelType::other || !filter.keeps_gpu_event(data, i)) continue;
    groups[{g.device[i], it->second}][g.name_id[i]].push_back(g.duration(i));
  }
  // HTA's GPU rows are every row with a stream: stream-carrying sync waits take part ("Stream
  // Wait Event" is COMPUTATION by name).
  const auto& s = data.gpu_syncs;
  for (size_t i = 0; i < s.size(); ++i) {
    auto [it, fresh] = type_of_name.try_emplace(s.name_id[i], HtaKernelType::other);
    if (fresh) it->second = hta_kernel_type(data.name(s.name_id[i]));
    if (it->second == HtaKernelType::other || !filter.keeps_gpu_sync(data, i)) continue;
    groups[{s.device[i], it->second}][s.name_id[i]].push_back(s.end[i] - s.start[i]);
  }
  std::vector<KernelTypeStats> out;
  for (const auto& [key, by_name] : groups) {
    std::vector<KernelStat> rows;
    for (const auto& [name_id, durations] : by_name)
      rows.push_back(stat_of(data.name(name_id), durations));
    std::stable_sort(rows.begin(), rows.end(), by_sum_then_name);
    KernelTypeStats t;
    t.device = key.first;
    t.kernel_type = type_label(key.second);
    fold_into_others(std::move(rows), options.top, options.duration_ratio, t.top, t.others_kernels,
                     t.others_sum_ns);
    out.push_back(std::move(t));
  }
  return out;
}

AnnotationStats gpu_user_annotation_stats(const CaptureData& data, size_t top,
                                          double duration_ratio, bool hta_last_step_filter) {
  const HtaStepFilter filter = HtaStepFilter::for_capture(data, hta_last_step_filter);
  std::map<int64_t, std::vector<int64_t>> by_name;
  for (const HostRange& a : data.gpu_annotations)
    if (!filter.active || a.start < filter.last_step_start)
      by_name[a.name_id].push_back(a.end - a.start);
  std::vector<KernelStat> rows;
  for (const auto& [name_id, durations] : by_name)
    rows.push_back(stat_of(data.name(name_id), durations));
  std::stable_sort(rows.begin(), rows.end(), by_sum_then_name);
  AnnotationStats out;
  fold_into_others(std::move(rows), top, duration_ratio, out.top, out.others_names,
                   out.others_sum_ns);
  return out;
}

}  // namespace fleetscope::analyzer
