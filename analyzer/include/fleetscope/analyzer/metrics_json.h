// Every metric of one capture as one JSON object, keyed by the metric names documented in
// docs/analyzer.md ("Metrics"):
//   {"capture": {...}, "devices": {"0": {...}, ...}, "streams": [...], "iterations": [...],
//    "launches": {...}, "memory": {"0": {...}, ...}, "idle_interval_stats": [...],
//    "memory_bandwidth": [...], "kernel_stats": [...], "operator_table": [...],
//    "kernel_table": [...], "critical_path": {...}}
// and, with `series`, "queue_length_time_series", "memory_bandwidth_time_series" and the critical
// path's edges ("critical_path"."path").
// Times are integer ns, fractions are 0..1 (est_achieved_occupancy is in percent, as in the
// profiler plugin). A metric the trace lacks the data for is null, with a sibling
// "<name>_needs" string naming the missing data.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>

#include "fleetscope/analyzer/capture_data.h"

namespace fleetscope::analyzer {

struct MetricsJsonOptions {
  bool series = false;      // add the time series (queue length, memory bandwidth)
  size_t top_kernels = 10;  // kernel_stats: names per HTA kernel type (HTA num_kernels)
  size_t table_rows = 50;   // operator_table / kernel_table: rows kept (largest first)
};

nlohmann::json metrics_json(const CaptureData& data, const MetricsJsonOptions& options = {});

}  // namespace fleetscope::analyzer
