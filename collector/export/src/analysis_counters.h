// Counter tracks derived by analysis, as Holistic Trace Analysis 0.5.0 adds them to a trace with
// TraceAnalysis.generate_trace_with_counters() (hta/trace_analysis.py; the series come from
// hta/analyzers/trace_counters.py, the events from Trace.convert_time_series_to_events in
// hta/common/trace.py). They are not table rows, so they are computed here from the capture by
// the analyzer's one model of each series, not described in schema/tables.py:
//   - "Queue Length" (analyzer::queue_length_time_series): one "C" event per point of each
//     stream's launch-queue length, on the GPU's process, with "id" = the stream (Chrome and
//     Perfetto show one track per name and id), args {"Queue Length": n};
//   - memory-copy bandwidth (analyzer::memory_bandwidth_time_series): one "C" event per point of
//     each copy kind's series, named by the kind ("Memcpy HtoD", "Memset", ...), args
//     {"Memcpy BW": GB/s}.
// Unlike HTA, the export does not apply HTA's last-ProfilerStep filter: the counters describe
// every event the file holds (docs/export.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "event_builder.h"
#include "fleetscope/analyzer/capture_data.h"

namespace fleetscope::exporter {

struct AnalysisCounterStats {
  int64_t queue_length_points = 0, bandwidth_points = 0;
};

// Writes the counter events of `data` through `emit`; `pid_base` is added to every GPU pid (a
// several-capture export's process group).
AnalysisCounterStats write_analysis_counters(const analyzer::CaptureData& data, EventBuilder& event,
                                             int64_t pid_base,
                                             const std::function<void(std::string_view)>& emit);

// What the capture must have loaded for the counters (launch calls for the queue).
analyzer::CaptureParts analysis_counter_parts();

}  // namespace fleetscope::exporter
