// "Export the visible range as a Chrome trace": the timeline's events overlapping a range, as
// complete ("X") events that Perfetto and chrome://tracing open — one process per host process
// (GPU work under its streams, host threads under their ids), ts/dur in µs from the range start.
#pragma once

#include <string>

#include "timeline_data.h"

namespace fleetscope::gui {

// Written to a temporary file beside `path`, then renamed; throws fleetscope::Error naming the
// file on failure. Returns the number of events written.
int64_t export_range_chrome(const TimelineData& data, TimeRange range, const std::string& path);

}  // namespace fleetscope::gui
