#include "fleetscope/analyzer/capture_data.h"

#include <algorithm>
#include <numeric>

#include "fleetscope/analyzer/device_metrics.h"

namespace fleetscope::analyzer {

const char* to_string(WorkClass work_class) {
  switch (work_class) {
    case WorkClass::computation:
      return "computation";
    case WorkClass::communication:
      return "communication";
    case WorkClass::memory:
      return "memory";
    case WorkClass::synchronization:
      return "synchronization";
  }
  return "computation";
}

WorkClass classify_gpu_work(GpuEventKind kind, const std::string& name) {
  if (kind != GpuEventKind::kernel) return WorkClass::memory;
  // HTA's get_kernel_type is the one rule (every HTA analysis classifies with it, the temporal
  // breakdown included: hta/analyzers/breakdown_analysis.py get_temporal_breakdown keeps
  // kernel_type == COMPUTATION as compute), so an MTIA "dma..." kernel is memory, not compute.
  switch (hta_kernel_type(name)) {
    case HtaKernelType::computation:
      return WorkClass::computation;
    case HtaKernelType::communication:
      return WorkClass::communication;
    case HtaKernelType::memory:
      return WorkClass::memory;
    case HtaKernelType::other:
      break;
  }
  // HTA's OTHER: a "Sync" name, or "Memcpy" later in the name (a copy by another name).
  const std::string line = name.substr(0, name.find('\n'));
  return line.find("Sync") != std::string::npos ? WorkClass::synchronization : WorkClass::memory;
}

// One spelling for every part: the store owns the enum labels (rows.h).
const char* sync_label(int32_t sync_type) {
  return store::sync_type_label(sync_type);
}

void GpuEvents::reserve(size_t n) {
  start.reserve(n), end.reserve(n), device.reserve(n), stream.reserve(n);
  correlation.reserve(n), global_pid.reserve(n), name_id.reserve(n), kind.reserve(n);
  work_class.reserve(n), bytes.reserve(n), copy_kind.reserve(n), src_kind.reserve(n);
  dst_kind.reserve(n), grid_blocks.reserve(n), est_occupancy.reserve(n);
}

void RuntimeCalls::reserve(size_t n) {
  start.reserve(n), end.reserve(n), correlation.reserve(n), name_id.reserve(n);
  global_tid.reserve(n);
}

namespace {

template <class T>
void apply_permutation(std::vector<T>& column, const std::vector<uint32_t>& order) {
  std::vector<T> sorted(column.size());
  for (size_t i = 0; i < order.size(); ++i) sorted[i] = column[order[i]];
  column.swap(sorted);
}

template <class T>
void apply_permutation(CompactColumn<T>& column, const std::vector<uint32_t>& order) {
  column.permute(order);
}

bool is_sorted_by_start(const std::vector<int64_t>& start, const std::vector<int64_t>& end) {
  for (size_t i = 1; i < start.size(); ++i)
    if (start[i] < start[i - 1] || (start[i] == start[i - 1] && end[i] < end[i - 1])) return false;
  return true;
}

// The stable order by (start, end). The loader appends kernels, then copies, then memsets, each
// table usually in time order already: a few sorted runs, which are merged (O(n log runs), the
// same order a stable sort gives, since a merge takes the earlier run's element first on ties)
// instead of sorted again. Many runs (unordered input): a stable sort.
std::vector<uint32_t> order_by_start(const std::vector<int64_t>& start,
                                     const std::vector<int64_t>& end) {
  std::vector<uint32_t> order(start.size());
  std::iota(order.begin(), order.end(), 0u);
  const auto less = [&](uint32_t a, uint32_t b) {
    return start[a] != start[b] ? start[a] < start[b] : end[a] < end[b];
  };
  constexpr size_t kMaxRunsToMerge = 16;
  std::vector<size_t> bounds{0};
  for (size_t i = 1; i < order.size() && bounds.size() <= kMaxRunsToMerge; ++i)
    if (less(static_cast<uint32_t>(i), static_cast<uint32_t>(i - 1))) bounds.push_back(i);
  if (bounds.size() > kMaxRunsToMerge) {
    std::stable_sort(order.begin(), order.end(), less);
    return order;
  }
  bounds.push_back(order.size());
  while (bounds.size() > 2) {  // merge neighbouring runs pairwise until one is left
    std::vector<size_t> merged{0};
    size_t k = 0;
    for (; k + 2 < bounds.size(); k += 2) {
      std::inplace_merge(order.begin() + static_cast<std::ptrdiff_t>(bounds[k]),
                         order.begin() + static_cast<std::ptrdiff_t>(bounds[k + 1]),
                         order.begin() + static_cast<std::ptrdiff_t>(bounds[k + 2]), less);
      merged.push_back(bounds[k + 2]);
    }
    if (k + 1 < bounds.size() && merged.back() != bounds.back()) merged.push_back(bounds.back());
    bounds.swap(merged);
  }
  return order;
}

void sort_gpu(GpuEvents& g) {
  if (is_sorted_by_start(g.start, g.end)) return;
  auto order = order_by_start(g.start, g.end);
  apply_permutation(g.start, order), apply_permutation(g.end, order);
  apply_permutation(g.device, order), apply_permutation(g.stream, order);
  apply_permutation(g.correlation, order), apply_permutation(g.global_pid, order);
  apply_permutation(g.name_id, order), apply_permutation(g.kind, order);
  apply_permutation(g.work_class, order), apply_permutation(g.bytes, order);
  apply_permutation(g.copy_kind, order), apply_permutation(g.src_kind, order);
  apply_permutation(g.dst_kind, order);
  if (g.grid_blocks.size() == order.size()) apply_permutation(g.grid_blocks, order);
  if (g.est_occupancy.size() == order.size()) apply_permutation(g.est_occupancy, order);
}

void sort_runtime(RuntimeCalls& r) {
  if (is_sorted_by_start(r.start, r.end)) return;
  auto order = order_by_start(r.start, r.end);
  apply_permutation(r.start, order), apply_permutation(r.end, order);
  apply_permutation(r.correlation, order), apply_permutation(r.name_id, order);
  apply_permutation(r.global_tid, order);
}

// Maps correlation ids to runtime-call indexes. CUPTI correlation ids are small dense integers,
// so a flat table is used when the id range allows; otherwise sorted pairs and binary search.
class CorrelationIndex {
 public:
  explicit CorrelationIndex(const RuntimeCalls& calls) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    size_t n = 0;
    for (int64_t c : calls.correlation) {
      if (c < 0) continue;
      lo = std::min(lo, c), hi = std::max(hi, c), ++n;
    }
    if (n == 0) return;
    if (static_cast<uint64_t>(hi - lo) <= 4 * n + 1024) {
      base_ = lo;
      dense_.assign(static_cast<size_t>(hi - lo + 1), -1);
      // The first call with a given id wins (HTA joins one runtime row per correlation).
      for (size_t i = calls.size(); i-- > 0;)
        if (calls.correlation[i] >= 0) dense_[calls.correlation[i] - lo] = static_cast<int64_t>(i);
    } else {
      sparse_.reserve(n);
      for (size_t i = 0; i < calls.size(); ++i)
        if (calls.correlation[i] >= 0) sparse_.emplace_back(calls.correlation[i], i);
      std::stable_sort(sparse_.begin(), sparse_.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    }
  }
  int64_t find(int64_t correlation) const {
    if (correlation < 0) return -1;
    if (!dense_.empty()) {
      int64_t k = correlation - base_;
      return (k >= 0 && k < static_cast<int64_t>(dense_.size())) ? dense_[k] : -1;
    }
    auto it = std::lower_bound(sparse_.begin(), sparse_.end(), correlation,
                               [](const auto& p, int64_t c) { return p.first < c; });
    return (it != sparse_.end() && it->first == correlation) ? static_cast<int64_t>(it->second)
                                                             : -1;
  }

 private:
  int64_t base_ = 0;
  std::vector<int64_t> dense_;
  std::vector<std::pair<int64_t, size_t>> sparse_;
};

}  // namespace

std::string CaptureParts::names() const {
  std::string out;
  auto add = [&](bool set, const char* name) {
    if (set) out += (out.empty() ? "" : ", ") + std::string(name);
  };
  add(runtime, "runtime"), add(gpu_syncs, "gpu_syncs"), add(cpu_ops, "cpu_ops");
  add(dataloader_ops, "dataloader_ops"), add(memory_events, "memory_events");
  return out;
}

const std::string& CaptureData::name(int64_t id) const {
  static const std::string unknown = "<unknown>";
  auto it = names.find(id);
  return it == names.end() ? unknown : it->second;
}

void CaptureData::build_reverse_index() {
  ids_by_name_.clear();
  for (const auto& [id, text] : names) ids_by_name_.emplace(text, id);
  for (const auto& [id, text] : names) next_local_id_ = std::min(next_local_id_, id - 1);
  reverse_index_built_ = true;
}

int64_t CaptureData::intern(const std::string& text) {
  if (!reverse_index_built_ || ids_by_name_.size() != names.size()) build_reverse_index();
  if (auto it = ids_by_name_.find(text); it != ids_by_name_.end()) return it->second;
  int64_t id = next_local_id_--;
  names.emplace(id, text);
  ids_by_name_.emplace(text, id);
  return id;
}

std::optional<int64_t> CaptureData::find_name(const std::string& text) const {
  for (const auto& [id, value] : names)
    if (value == text) return id;
  return std::nullopt;
}

void CaptureData::finalize() {
  check_time_ranges(*this);
  sort_gpu(gpu);
  sort_runtime(runtime);
  // Rows usually arrive in time order (the store's readers order them): a linear check first,
  // the sort only when needed.
  const auto by_start = [](const auto& a, const auto& b) { return a.start < b.start; };
  if (!std::is_sorted(iterations.begin(), iterations.end(), by_start))
    std::sort(iterations.begin(), iterations.end(), by_start);
  const auto by_ts = [](const auto& a, const auto& b) { return a.ts < b.ts; };
  if (!std::is_sorted(memory.begin(), memory.end(), by_ts))
    std::stable_sort(memory.begin(), memory.end(), by_ts);
  if (!std::is_sorted(dataloader_ops.begin(), dataloader_ops.end(), by_start))
    std::sort(dataloader_ops.begin(), dataloader_ops.end(), by_start);

  events_by_device.clear();
  events_by_stream.clear();
  for (uint32_t i = 0; i < gpu.size(); ++i) {
    events_by_device[gpu.device[i]].push_back(i);
    events_by_stream[{gpu.device[i], gpu.stream[i]}].push_back(i);
  }

  CorrelationIndex index(runtime);
  launch_call_of.clear();
  for (size_t i = 0; i < gpu.size(); ++i) launch_call_of.push_back(index.find(gpu.correlation[i]));
  gpu_syncs.correlation.resize(gpu_syncs.size(), -1);
  gpu_syncs.call_of.assign(gpu_syncs.size(), -1);
  for (size_t i = 0; i < gpu_syncs.size(); ++i)
    gpu_syncs.call_of[i] = index.find(gpu_syncs.correlation[i]);

  busy_by_device.clear();
  for (const auto& [device, members] : events_by_device) {
    std::vector<Interval> spans;
    spans.reserve(members.size());
    for (uint32_t i : members) spans.push_back({gpu.start[i], gpu.end[i]});
    busy_by_device[device] = unite_sorted(spans);  // members are in start order already
  }
}

std::optional<Interval> CaptureData::device_span(int32_t device) const {
  auto it = events_by_device.find(device);
  if (it == events_by_device.end() || it->second.empty()) return std::nullopt;
  int64_t first = gpu.start[it->second.front()];
  int64_t last = INT64_MIN;
  for (uint32_t i : it->second) last = std::max(last, gpu.end[i]);
  return Interval{first, last};
}

std::optional<Interval> CaptureData::gpu_span() const {
  if (gpu.size() == 0) return std::nullopt;
  return Interval{gpu.start.front(), *std::max_element(gpu.end.begin(), gpu.end.end())};
}

std::optional<Interval> CaptureData::step_span() const {
  if (iterations.empty()) return std::nullopt;
  int64_t last = INT64_MIN;
  for (const auto& it : iterations) last = std::max(last, it.end);
  return Interval{iterations.front().start, last};
}

std::string memcpy_label(int32_t copy_kind, std::optional<int32_t> src_kind,
                         std::optional<int32_t> dst_kind) {
  auto mem = [](std::optional<int32_t> k) { return k ? store::memory_kind_label(*k) : "Unknown"; };
  std::string label = "Memcpy ";
  label += store::memcpy_kind_short(copy_kind);
  if (src_kind || dst_kind)
    label += std::string(" (") + mem(src_kind) + " -> " + mem(dst_kind) + ")";
  return label;
}

}  // namespace fleetscope::analyzer
