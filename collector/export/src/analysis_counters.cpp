#include "analysis_counters.h"

#include "fleetscope/analyzer/memory_bandwidth.h"
#include "fleetscope/analyzer/queue_length.h"
#include "fleetscope/export/chrome_trace.h"

namespace fleetscope::exporter {

// HTA's names: counter_name "Queue Length" / counter_col "queue_length" and counter_name
// "Memcpy BW" (generate_trace_with_counters); the arg key is the counter name.
constexpr std::string_view kQueueLengthName = "Queue Length";
constexpr std::string_view kBandwidthArg = "Memcpy BW";

analyzer::CaptureParts analysis_counter_parts() {
  analyzer::CaptureParts parts = analyzer::CaptureParts::gpu_only();
  parts.runtime = true;
  return parts;
}

AnalysisCounterStats write_analysis_counters(const analyzer::CaptureData& data, EventBuilder& event,
                                             int64_t pid_base,
                                             const std::function<void(std::string_view)>& emit) {
  AnalysisCounterStats stats;
  // The export holds every event, so no series drops HTA's last profiler step.
  constexpr bool kNoLastStepFilter = false;
  for (const analyzer::QueueLengthSeries& series :
       analyzer::queue_length_time_series(data, kNoLastStepFilter)) {
    for (const analyzer::QueuePoint& point : series.points) {
      event.begin("C")
          .field("name", kQueueLengthName)
          .field("pid", pid_base + gpu_pid(series.device))
          .field("id", int64_t{series.stream})
          .time("ts", point.time_ns)
          .arg(kQueueLengthName, point.queue_length);
      emit(event.end());
      ++stats.queue_length_points;
    }
  }
  for (const analyzer::MemoryBandwidthSeries& series :
       analyzer::memory_bandwidth_time_series(data, kNoLastStepFilter)) {
    for (const analyzer::BandwidthPoint& point : series.points) {
      event.begin("C")
          .field("name", series.copy_kind)
          .field("pid", pid_base + gpu_pid(series.device))
          .time("ts", point.time_ns)
          .arg(kBandwidthArg, point.gbps);
      emit(event.end());
      ++stats.bandwidth_points;
    }
  }
  return stats;
}

}  // namespace fleetscope::exporter
