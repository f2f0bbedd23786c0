// Launch-queue length per stream: HTA get_queue_length_time_series / get_queue_length_summary
// (hta/analyzers/trace_counters.py, holistictraceanalysis 0.5.0).
//
// The queue of a stream is the work enqueued but not yet started: +1 at the start of each launch
// call (a runtime or driver call named in kQueueLaunchApis that has a correlated GPU event), -1 at
// the start of that GPU event (kernel, memcpy or memset). The time series is the running sum per
// stream at each of those points, in time order (a step function: the value holds until the next
// point); the summary is pandas' describe() of the values at the points (count, mean, sample
// standard deviation, min, linear-interpolated quartiles, max). HTA's last-step filter
// (HtaStepFilter) applies first, as HTA applies it at load. HTA keys by stream within a rank;
// here the key is (device, stream), the same for one-device ranks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/analyzer/capture_data.h"

namespace fleetscope::analyzer {

// HTA's TraceSymbolTable.get_runtime_launch_events_query names: CUDA, MTIA and ROCm launches.
extern const std::vector<std::string> kQueueLaunchApis;

struct QueuePoint {
  int64_t time_ns = 0;
  int64_t queue_length = 0;
  int64_t gpu_event = -1;  // the GPU event (data.gpu index) whose launch or start this point is
  bool enqueue = false;    // its launch (+1), else its start (-1)
};

struct QueueLengthSeries {
  int32_t device = 0, stream = 0;
  // In time order; at one time, enqueues before dequeues (so the length never goes below 0).
  // HTA leaves such ties in its unstable sort's order: on the shared traces it put the dequeue
  // first once (simple_add) and the enqueue first once (multi_stream_event_sync); the step
  // function, and so the time-weighted mean, is the same either way.
  std::vector<QueuePoint> points;
};

struct QueueLengthSummary {
  int32_t device = 0, stream = 0;
  int64_t count = 0;  // points in the series
  double mean = 0, std = 0, min = 0, p25 = 0, p50 = 0, p75 = 0, max = 0;
  // Σ value × time to the next point / (last point − first point): the time-weighted mean of
  // the step function (nullopt for a zero-length series).
  std::optional<double> time_weighted_mean;
};

std::vector<QueueLengthSeries> queue_length_time_series(const CaptureData& data,
                                                        bool hta_last_step_filter = true);
QueueLengthSummary summarize(const QueueLengthSeries& series);
std::vector<QueueLengthSummary> queue_length_summary(const CaptureData& data,
                                                     bool hta_last_step_filter = true);

// HTA get_time_spent_blocked_on_full_queue (trace_counters.py): per stream, the time the queue
// length is at least `max_queue_length` (HTA's CUDA_MAX_LAUNCH_QUEUE_PER_STREAM, 1024, from
// hta/common/constants.py): Σ over points with length >= max of (next point's time − its time);
// the last point has no next and adds nothing. While the queue is full a launch call blocks the
// host thread. HTA keeps only one stream per rank in its result (a dict keyed by rank,
// overwritten per stream); every stream with blocked time is kept here.
constexpr int64_t kCudaMaxLaunchQueuePerStream = 1024;
struct BlockedOnFullQueue {
  int32_t device = 0, stream = 0;
  int64_t blocked_ns = 0;
};
std::vector<BlockedOnFullQueue> time_blocked_on_full_queue(
    const std::vector<QueueLengthSeries>& series,
    int64_t max_queue_length = kCudaMaxLaunchQueuePerStream);

}  // namespace fleetscope::analyzer
