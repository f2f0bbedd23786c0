#include "aggregate.h"

#include <algorithm>
#include <map>

namespace fleetscope::gui {

std::vector<AggregateRow> aggregate_range(const TimelineData& data, TimeRange range,
                                          const std::vector<size_t>& tracks) {
  std::map<std::pair<EventKind, int32_t>, AggregateRow> rows;
  auto visit = [&](size_t t) {
    if (t >= data.events.size()) return;
    const TrackEvents& e = data.events[t];
    for (size_t i = TimelineData::first_overlapping(e.start, range.begin, e.max_duration);
         i < e.size() && e.start[i] < range.end; ++i) {
      if (e.end[i] <= range.begin && !(e.end[i] == e.start[i] && e.start[i] >= range.begin))
        continue;
      AggregateRow& row = rows[{e.kind[i], e.name[i]}];
      ++row.count;
      row.total_ns += std::min(e.end[i], range.end) - std::max(e.start[i], range.begin);
    }
  };
  if (tracks.empty())
    for (size_t t = 0; t < data.events.size(); ++t) visit(t);
  else
    for (size_t t : tracks) visit(t);
  std::vector<AggregateRow> out;
  for (auto& [key, row] : rows) {
    row.kind = key.first;
    row.name = data.name(key.second);
    out.push_back(std::move(row));
  }
  std::sort(out.begin(), out.end(), [](const AggregateRow& a, const AggregateRow& b) {
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.name < b.name;
  });
  return out;
}

}  // namespace fleetscope::gui
