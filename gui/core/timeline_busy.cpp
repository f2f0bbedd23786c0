#include "timeline_busy.h"

#include <algorithm>
#include <vector>

namespace fleetscope::gui {

namespace {

void add_raw_kernels(const TrackEvents& events, TimeRange range,
                     std::vector<analyzer::Interval>& out) {
  for (size_t i = TimelineData::first_overlapping(events.start, range.begin, events.max_duration);
       i < events.size() && events.start[i] < range.end; ++i)
    if (events.kind[i] == EventKind::kernel && events.end[i] > range.begin)
      out.push_back({events.start[i], events.end[i]});
}

void add_level_kernels(const ZoomLevel& level, TimeRange range,
                       std::vector<analyzer::Interval>& out) {
  // Items are disjoint and sorted by start, so their ends are sorted too.
  auto it = std::upper_bound(level.items.begin(), level.items.end(), range.begin,
                             [](int64_t t, const LevelItem& item) { return t < item.end; });
  for (; it != level.items.end() && it->start < range.end; ++it)
    if (it->kind == EventKind::kernel) out.push_back({it->start, it->end});
}

}  // namespace

TimelineKernelBusy timeline_kernel_busy(const TimelineData& data, TimeRange range) {
  TimelineKernelBusy busy;
  busy.from_summary = !data.has_events;
  std::map<int32_t, std::vector<analyzer::Interval>> kernels;
  for (size_t t = 0; t < data.tracks.size(); ++t) {
    const TrackKey& key = data.tracks[t].key;
    if (key.kind != TrackKind::gpu_stream) continue;
    std::vector<analyzer::Interval>& out = kernels[key.device];
    if (data.has_events) {
      if (t < data.events.size()) add_raw_kernels(data.events[t], range, out);
    } else if (t < data.levels.size() && !data.levels[t].empty() && !data.levels[t][0].empty()) {
      add_level_kernels(data.levels[t][0][0], range, out);
    }
  }
  for (auto& [device, intervals] : kernels)
    busy.by_device[device] = analyzer::unite(std::move(intervals));
  return busy;
}

}  // namespace fleetscope::gui
