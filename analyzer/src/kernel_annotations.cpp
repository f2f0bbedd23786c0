#include "fleetscope/analyzer/kernel_annotations.h"

#include <algorithm>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "fleetscope/analyzer/metrics.h"

namespace fleetscope::analyzer {

namespace {

// The rows of one (device, stream) in start order, as indexes into `start`/`end` columns, and the
// longest row among them: the rows overlapping [a, b) start in [a - longest, b).
template <class Starts, class Ends>
struct StreamRows {
  const Starts& start;
  const Ends& end;
  const std::vector<uint32_t>& rows;
  int64_t longest = 0;

  // Calls `assign(i)` for each row i that overlaps [begin, end_) ([start, max(start, end))).
  template <class Assign>
  void overlapping(int64_t begin, int64_t finish, Assign&& assign) const {
    auto row = std::lower_bound(rows.begin(), rows.end(), begin - longest,
                                [&](uint32_t i, int64_t t) { return start[i] < t; });
    for (; row != rows.end() && start[*row] < finish; ++row)
      if (begin < std::max(start[*row], end[*row])) assign(*row);
  }
};

template <class Starts, class Ends>
int64_t longest_row(const Starts& start, const Ends& end, const std::vector<uint32_t>& rows) {
  int64_t longest = 0;
  for (uint32_t i : rows) longest = std::max(longest, std::max(start[i], end[i]) - start[i]);
  return longest;
}

}  // namespace

// The GPU events are read through the capture's own per-stream index (CaptureData::
// events_by_stream, start order), not copied: the 10 M-kernel capture's copy of them cost 570 MB
// at the analyzer's peak (docs/benchmarks.md, "Analyzer memory"). Which rows an annotation covers
// does not depend on the order it visits them, so the events and the (few) sync waits of a stream
// are visited one list after the other.
KernelAnnotations gpu_kernels_with_user_annotations(const CaptureData& data,
                                                    bool hta_last_step_filter) {
  const HtaStepFilter filter = HtaStepFilter::for_capture(data, hta_last_step_filter);
  KernelAnnotations out;
  out.of_gpu.assign(data.gpu.size(), -1);
  out.of_sync.assign(data.gpu_syncs.size(), -1);
  const GpuEvents& g = data.gpu;
  const GpuSyncs& s = data.gpu_syncs;
  for (size_t i = 0; i < g.size(); ++i) out.rows += filter.keeps_gpu_event(data, i) ? 1 : 0;
  // Sync waits by (device, stream), in start order (the column is in row order).
  std::map<std::pair<int32_t, int32_t>, std::vector<uint32_t>> syncs_by_stream;
  for (size_t i = 0; i < s.size(); ++i)
    if (filter.keeps_gpu_sync(data, i)) {
      syncs_by_stream[{s.device[i], s.stream[i]}].push_back(static_cast<uint32_t>(i));
      ++out.rows;
    }
  for (auto& [key, rows] : syncs_by_stream)
    std::stable_sort(rows.begin(), rows.end(),
                     [&](uint32_t a, uint32_t b) { return s.start[a] < s.start[b]; });

  // Annotations kept by the last-step filter (CPU-side events for it), longest first.
  std::vector<size_t> order;
  for (size_t k = 0; k < data.gpu_annotations.size(); ++k)
    if (!filter.active || data.gpu_annotations[k].start < filter.last_step_start)
      order.push_back(k);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const HostRange &x = data.gpu_annotations[a], &y = data.gpu_annotations[b];
    const int64_t dx = x.end - x.start, dy = y.end - y.start;
    return dx != dy ? dx > dy : x.start < y.start;
  });
  // The longest row of each stream, once per stream an annotation is on.
  std::map<std::pair<int32_t, int32_t>, std::pair<int64_t, int64_t>> longest;  // events, syncs
  static const std::vector<uint32_t> no_rows;
  for (size_t k : order) {
    const HostRange& a = data.gpu_annotations[k];
    const std::pair<int32_t, int32_t> key{static_cast<int32_t>((a.global_tid >> 24) & 0xFFFFFF),
                                          static_cast<int32_t>(a.global_tid & 0xFFFFFF)};
    const auto events = data.events_by_stream.find(key);
    const auto syncs = syncs_by_stream.find(key);
    const auto& event_rows = events == data.events_by_stream.end() ? no_rows : events->second;
    const auto& sync_rows = syncs == syncs_by_stream.end() ? no_rows : syncs->second;
    if (event_rows.empty() && sync_rows.empty()) continue;
    auto [bound, fresh] = longest.try_emplace(key);
    if (fresh)
      bound->second = {longest_row(g.start, g.end, event_rows),
                       longest_row(s.start, s.end, sync_rows)};
    const auto annotation = static_cast<int32_t>(k);
    StreamRows<decltype(g.start), decltype(g.end)>{g.start, g.end, event_rows, bound->second.first}
        .overlapping(a.start, a.end, [&](uint32_t i) {
          if (filter.keeps_gpu_event(data, i)) out.of_gpu[i] = annotation;
        });
    StreamRows<decltype(s.start), decltype(s.end)>{s.start, s.end, sync_rows, bound->second.second}
        .overlapping(a.start, a.end, [&](uint32_t i) { out.of_sync[i] = annotation; });
  }
  return out;
}

nlohmann::json gpu_kernels_with_user_annotations_json(const CaptureData& data, bool per_kernel) {
  using nlohmann::json;
  const KernelAnnotations result = gpu_kernels_with_user_annotations(data);
  struct Total {
    int64_t kernels = 0, time_ns = 0;
  };
  std::map<int64_t, Total> by_name;  // annotation name id -> total
  int64_t annotated = 0;
  const auto count = [&](int64_t annotation, int64_t duration) {
    if (annotation < 0) return;
    Total& t = by_name[data.gpu_annotations[static_cast<size_t>(annotation)].name_id];
    ++t.kernels, t.time_ns += duration, ++annotated;
  };
  for (size_t i = 0; i < data.gpu.size(); ++i) count(result.of_gpu[i], data.gpu.duration(i));
  for (size_t i = 0; i < data.gpu_syncs.size(); ++i)
    count(result.of_sync[i], data.gpu_syncs.end[i] - data.gpu_syncs.start[i]);
  std::vector<std::pair<std::string, Total>> rows;
  for (const auto& [name_id, total] : by_name) rows.push_back({data.name(name_id), total});
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.time_ns != b.second.time_ns ? a.second.time_ns > b.second.time_ns
                                                : a.first < b.first;
  });
  json list = json::array();
  for (const auto& [name, total] : rows)
    list.push_back({{"name", name}, {"kernels", total.kernels}, {"kernel_time_ns", total.time_ns}});
  json out = {{"rows", result.rows},
              {"annotated", annotated},
              {"without_annotation", result.rows - annotated},
              {"by_annotation", std::move(list)}};
  if (per_kernel) {
    struct Item {
      int64_t start;
      int32_t device, stream;
      int64_t name_id, annotation;
    };
    std::vector<Item> items;
    const GpuEvents& g = data.gpu;
    const GpuSyncs& s = data.gpu_syncs;
    const HtaStepFilter filter = HtaStepFilter::for_capture(data);
    for (size_t i = 0; i < g.size(); ++i)
      if (filter.keeps_gpu_event(data, i))
        items.push_back({g.start[i], g.device[i], g.stream[i], g.name_id[i], result.of_gpu[i]});
    for (size_t i = 0; i < s.size(); ++i)
      if (filter.keeps_gpu_sync(data, i))
        items.push_back({s.start[i], s.device[i], s.stream[i], s.name_id[i], result.of_sync[i]});
    std::stable_sort(items.begin(), items.end(),
                     [](const Item& a, const Item& b) { return a.start < b.start; });
    json kernels = json::array();
    for (const Item& item : items)
      kernels.push_back(
          {{"start_ns", item.start},
           {"device", item.device},
           {"stream", item.stream},
           {"name", data.name(item.name_id)},
           {"user_annotation",
            item.annotation < 0
                ? json()
                : json(data.name(
                      data.gpu_annotations[static_cast<size_t>(item.annotation)].name_id))}});
    out["kernels"] = std::move(kernels);
  }
  return out;
}

}  // namespace fleetscope::analyzer
