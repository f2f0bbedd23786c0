// The timeline's vertical layout: tracks in display order, each a stack of rows (one per nesting
// depth, TimelineData::depth_count()), a small gap between tracks, and tracks that are hidden (a
// collapsed group of the track tree) taking no space at all. Pure (no Qt) so the widget's
// geometry, hit testing and scrolling are tested alone (tests/unit/timeline).
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "fleetscope/timeline/timeline_data.h"

namespace fleetscope::timeline {

struct RowSlot {
  size_t track = 0;
  size_t depth = 0;
  int top = 0;  // in content pixels (0 = the first row's top)
};

class RowLayout {
 public:
  RowLayout() = default;
  // `hidden`: per track, true when it takes no space (may be shorter than the track list).
  RowLayout(const TimelineData& data, const std::vector<bool>& hidden, int row_height,
            int track_gap);

  int row_height() const { return row_height_; }
  int height() const { return height_; }  // of all rows, in pixels
  const std::vector<RowSlot>& rows() const { return rows_; }
  // The index range [first, last) of the rows that overlap content pixels [y0, y1).
  std::pair<size_t, size_t> rows_between(int y0, int y1) const;
  std::optional<RowSlot> row_at(int y) const;
  // The top of a track's first row, or of one of its rows; nothing when hidden.
  std::optional<int> top_of(size_t track, size_t depth = 0) const;

 private:
  std::vector<RowSlot> rows_;
  std::vector<int> track_top_;  // per track, -1 when hidden
  int row_height_ = 1;
  int height_ = 0;
};

}  // namespace fleetscope::timeline
