// The analyzer's critical path of one iteration (analyzer/critical_path.h, HTA's
// critical_path_analysis) as the GUI shows it: the events its edges are attributed to, each found
// on the capture's timeline (to highlight and jump to), and a one-paragraph summary.
#pragma once

#include <string>
#include <vector>

#include "finding_evidence.h"
#include "fleetscope/analyzer/critical_path.h"
#include "session.h"

namespace fleetscope::gui {

// Each event the path runs through, once, in the order the path first reaches it (edges that
// are attributed to no event — dependencies, syncs — are left out).
std::vector<PathEvent> critical_path_members(const analyzer::CriticalPath& path,
                                             const analyzer::CaptureData& data);
// Those events found on the timeline. `timeline` may be null or hold no raw events yet: then no
// event has a track.
std::vector<EvidenceEvent> critical_path_events(const std::vector<PathEvent>& members,
                                                const TimelineData* timeline);

// "Critical path of step 3 (1.20 ms – 2.45 ms): 1.19 ms through 38 events; bound by
// gpu_compute_bound 61.0 %, cpu_bound 30.2 %, …" or why it was not computed. Times from
// `capture_start`.
std::string critical_path_summary(const analyzer::CriticalPath& path, int64_t capture_start);

}  // namespace fleetscope::gui
