// Time by event name and kind inside a time range (what nsys's "Events View" statistics and
// Perfetto's area selection show): every event overlapping [begin, end) counts once, with its
// duration clipped to the range; sums, not unions (as `nsys stats`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "timeline_data.h"

namespace fleetscope::gui {

struct AggregateRow {
  EventKind kind = EventKind::kernel;
  std::string name;
  int64_t count = 0;
  int64_t total_ns = 0;  // clipped to the range
};

// Sorted by total time, largest first (ties by kind, then name). `tracks`: the tracks to include
// (empty = all).
std::vector<AggregateRow> aggregate_range(const TimelineData& data, TimeRange range,
                                          const std::vector<size_t>& tracks = {});

}  // namespace fleetscope::gui
