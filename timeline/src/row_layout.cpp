#include "fleetscope/timeline/row_layout.h"

#include <algorithm>

namespace fleetscope::timeline {

RowLayout::RowLayout(const TimelineData& data, const std::vector<bool>& hidden, int row_height,
                     int track_gap)
    : row_height_(std::max(1, row_height)) {
  track_top_.assign(data.tracks.size(), -1);
  int y = 0;
  for (size_t t = 0; t < data.tracks.size(); ++t) {
    if (t < hidden.size() && hidden[t]) continue;
    track_top_[t] = y;
    const size_t depths = data.depth_count(t);
    for (size_t d = 0; d < depths; ++d) rows_.push_back({t, d, y + int(d) * row_height_});
    y += int(depths) * row_height_ + track_gap;
  }
  height_ = y;
}

std::pair<size_t, size_t> RowLayout::rows_between(int y0, int y1) const {
  // Rows are sorted by top: the first whose bottom is below y0, up to the first at or after y1.
  auto first = std::partition_point(rows_.begin(), rows_.end(),
                                    [&](const RowSlot& r) { return r.top + row_height_ <= y0; });
  auto last =
      std::partition_point(first, rows_.end(), [&](const RowSlot& r) { return r.top < y1; });
  return {size_t(first - rows_.begin()), size_t(last - rows_.begin())};
}

std::optional<RowSlot> RowLayout::row_at(int y) const {
  const auto [first, last] = rows_between(y, y + 1);
  if (first == last) return std::nullopt;
  return rows_[first];
}

std::optional<int> RowLayout::top_of(size_t track, size_t depth) const {
  if (track >= track_top_.size() || track_top_[track] < 0) return std::nullopt;
  return track_top_[track] + int(depth) * row_height_;
}

}  // namespace fleetscope::timeline
