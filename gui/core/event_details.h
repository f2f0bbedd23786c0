// Details of one timeline event and its launch→GPU flow, read from the database by the event's
// track and times (the stored row, every column, names resolved), as nsys's event tooltip and
// Perfetto's flow arrows show them.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fleetscope/store/reader.h"
#include "timeline_data.h"

namespace fleetscope::gui {

struct EventDetails {
  std::vector<std::pair<std::string, std::string>> fields;
  std::optional<int64_t> correlation;
};

// A launch (CUDA API call on a thread track) and the GPU work it issued (on a stream track).
struct Flow {
  size_t launch_track = 0;
  int64_t launch_event = -1;
  size_t gpu_track = 0;
  int64_t gpu_event = -1;
};

EventDetails event_details(const store::Reader& reader, const TimelineData& data, size_t track,
                           int64_t event);
// The flow through the selected event (a launch or the GPU work), when both ends are on tracks.
std::optional<Flow> event_flow(const store::Reader& reader, const TimelineData& data, size_t track,
                               int64_t event);

}  // namespace fleetscope::gui
