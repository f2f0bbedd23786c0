#include "fleetscope/analyzer/kernel_annotations.h"

#include <algorithm>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "fleetscope/analyzer/metrics.h"

namespace fleetscope::analyzer {

namespace {

// A GPU row: an index into data.gpu (is_sync false) or data.gpu_syncs.
struct Row {
  int64_t start = 0, end = 0;
  bool is_sync = false;
  size_t index = 0;
};

}  // namespace

KernelAnnotations gpu_kernels_with_user_annotations(const CaptureData& data,
                                                    bool hta_last_step_filter) {
  const HtaStepFilter filter = HtaStepFilter::for_capture(data, hta_last_step_filter);
  KernelAnnotations out;
  out.of_gpu.assign(data.gpu.size(), -1);
  out.of_sync.assign(data.gpu_syncs.size(), -1);
  // Rows by (device, stream), in start order, with the longest row of each list.
  struct Stream {
    std::vector<Row> rows;
    int64_t longest = 0;
  };
  std::map<std::pair<int32_t, int32_t>, Stream> streams;
  const auto add = [&](int32_t device, int32_t stream, Row row) {
    Stream& s = streams[{device, stream}];
    s.longest = std::max(s.longest, row.end - row.start);
    s.rows.push_back(row);
    ++out.rows;
  };
  const GpuEvents& g = data.gpu;
  for (size_t i = 0; i < g.size(); ++i)
    if (filter.keeps_gpu_event(data, i))
      add(g.device[i], g.stream[i], {g.start[i], std::max(g.start[i], g.end[i]), false, i});
  const GpuSyncs& s = data.gpu_syncs;
  for (size_t i = 0; i < s.size(); ++i)
    if (filter.keeps_gpu_sync(data, i))
      add(s.device[i], s.stream[i], {s.start[i], std::max(s.start[i], s.end[i]), true, i});
  for (auto& [key, stream] : streams)
    std::stable_sort(stream.rows.begin(), stream.rows.end(),
                     [](const Row& a, const Row& b) { return a.start < b.start; });

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
  for (size_t k : order) {
    const HostRange& a = data.gpu_annotations[k];
    const auto device = static_cast<int32_t>((a.global_tid >> 24) & 0xFFFFFF);
    const auto stream_id = static_cast<int32_t>(a.global_tid & 0xFFFFFF);
    auto it = streams.find({device, stream_id});
    if (it == streams.end()) continue;
    const Stream& stream = it->second;
    // Rows starting before the annotation ends and ending after it starts: those that start
    // at most `longest` before it.
    auto row = std::lower_bound(stream.rows.begin(), stream.rows.end(), a.start - stream.longest,
                                [](const Row& r, int64_t t) { return r.start < t; });
    for (; row != stream.rows.end() && row->start < a.end; ++row)
      if (a.start < row->end) (row->is_sync ? out.of_sync : out.of_gpu)[row->index] = int64_t(k);
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
