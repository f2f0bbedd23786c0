// Every metric of one capture as one JSON object, keyed by the metric names documented in
// docs/analyzer.md ("Metrics"):
//   {"capture": {...}, "devices": {"0": {...}, ...}, "streams": [...], "iterations": [...],
//    "launches": {...}, "memory": {"0": {...}, ...}}
// Times are integer ns, fractions are 0..1 (est_achieved_occupancy is in percent, as in the
// profiler plugin). A metric the trace lacks the data for is null, with a sibling
// "<name>_needs" string naming the missing data.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "fleetscope/analyzer/capture_data.h"

namespace fleetscope::analyzer {

nlohmann::json metrics_json(const CaptureData& data);

}  // namespace fleetscope::analyzer
