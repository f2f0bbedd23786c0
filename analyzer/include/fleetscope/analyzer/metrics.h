// Metrics of one capture. Every metric has one definition, in nanoseconds, with its denominator
// stated, because the reference tools disagree:
//   - HTA (Holistic Trace Analysis) divides by the first-to-last GPU-event span (per rank; here
//     per device), and unites overlapping GPU intervals;
//   - the TensorBoard profiler plugin divides GPU utilization by the ProfilerStep span;
//   - `nsys analyze` sums durations instead of uniting them.
// The functions named after HTA analyses reproduce HTA's definitions so that results can be
// compared with the real package (tests/unit/analyzer_hta; exact HTA definitions in
// docs/metrics-hta.md). "GPU events" are kernels, memcpys and memsets; HTA's temporal breakdown
// also counts stream-carrying sync waits (CaptureData::gpu_syncs), and so does
// temporal_breakdown(). Emulated by default in the three HTA-named functions: HTA's
// last-ProfilerStep filter (see HtaStepFilter). Not emulated: HTA's float-µs timestamp rounding
// (the analyzer keeps integer ns).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/analyzer/capture_data.h"
#include "fleetscope/analyzer/gpu_utilization.h"

namespace fleetscope::analyzer {

// HTA (docs/metrics-hta.md §0.5) drops, before any analysis, GPU work launched in the last
// profiled step: when the capture has two or more ProfilerStep iterations, a GPU event is kept only
// if its launching runtime/driver call started before the last step's start (events with no
// launching call are dropped too). With fewer than two steps nothing is dropped.
//
// The same rule is the one definition of a step (counts_step): HTA's Trace.load_traces
// (hta/common/trace.py, include_last_profiler_step=False by default) leaves the last ProfilerStep
// out because the profiler stops inside it, so the capture's end cuts it short (the AMD/ROCm
// reference trace: ProfilerStep#2 lasts 49 us, ProfilerStep#1 9.29 ms). Step times in `analyze`,
// `fleet` and `candidates` count the steps counted_steps() returns.
struct HtaStepFilter {
  bool active = false;
  int64_t last_step_start = 0;
  static HtaStepFilter for_capture(const CaptureData& data, bool enabled = true);
  static HtaStepFilter for_steps(const std::vector<store::Iteration>& iterations,
                                 bool enabled = true);
  bool keeps_gpu_event(const CaptureData& data, size_t i) const;
  bool keeps_gpu_sync(const CaptureData& data, size_t i) const;
  // Every iteration but the last ProfilerStep when the filter is active; iterations of other
  // sources (nvtx, api: recorded when they end) always count.
  bool counts_step(const store::Iteration& step) const;
};
// The capture's steps, in the order of data.iterations: HtaStepFilter::counts_step applied to
// each process's iterations (HTA reads one rank, one process, per trace), so each process's own
// last ProfilerStep is left out.
std::vector<const store::Iteration*> counted_steps(const CaptureData& data);

// ---- HTA get_temporal_breakdown -------------------------------------------------------------
// Per device: span = last GPU-event end − first GPU-event start (HTA "kernel_time", including
// stream syncs); idle = span − |union of all of them|; compute = |union of those whose class is
// WorkClass::computation| (HTA get_kernel_type COMPUTATION); non_compute = span − compute − idle.
struct TemporalBreakdown {
  int32_t device = 0;
  Interval span;
  int64_t span_ns = 0;         // HTA kernel_time(ns)
  int64_t idle_ns = 0;         // HTA idle_time(ns)
  int64_t compute_ns = 0;      // HTA compute_time(ns)
  int64_t non_compute_ns = 0;  // HTA non_compute_time(ns)
  // Fractions of span_ns (HTA's *_pctg columns are 100x these, rounded to 2 decimals).
  double idle_fraction() const { return span_ns ? double(idle_ns) / double(span_ns) : 0.0; }
  double compute_fraction() const { return span_ns ? double(compute_ns) / double(span_ns) : 0.0; }
  double non_compute_fraction() const {
    return span_ns ? double(non_compute_ns) / double(span_ns) : 0.0;
  }
};
struct TemporalBreakdownOptions {
  bool hta_last_step_filter = true;  // HtaStepFilter; false = every event of the capture
};
std::vector<TemporalBreakdown> temporal_breakdown(const CaptureData& data,
                                                  const TemporalBreakdownOptions& options = {});

// ---- HTA get_idle_time_breakdown --------------------------------------------------------------
// Per (device, stream) — HTA keys by stream alone, the same for one-device ranks — kernels,
// memcpys and memsets (not syncs) in start order; the idle interval before event i is
// start[i] − end[i−1] (the previous event on the stream; the first event has none).
//   host wait:   the launching runtime call of event i started after end[i−1] (the CPU had not
//                yet asked for the work when the stream became free);
//   kernel wait: not host wait, and the interval is below consecutive_kernel_delay_ns;
//   other:       the rest (including events without a runtime call).
// As in HTA, intervals are summed as they are (a negative interval from overlapping events on
// one stream reduces the sum).
struct IdleTimeOptions {
  int64_t consecutive_kernel_delay_ns = 30'000;  // HTA's default threshold, 30 µs
  bool hta_last_step_filter = true;              // HtaStepFilter
  // Keep every interval's length per category (IdleTimeBreakdown::*_intervals_ns): the sample
  // behind HTA's show_idle_interval_stats=True (pandas describe() per category and stream).
  bool keep_intervals = false;
};
struct IdleTimeBreakdown {
  int32_t device = 0;
  int32_t stream = 0;
  int64_t host_wait_ns = 0;
  int64_t kernel_wait_ns = 0;
  int64_t other_ns = 0;
  int64_t host_wait_count = 0, kernel_wait_count = 0, other_count = 0;  // intervals per category
  // With IdleTimeOptions::keep_intervals, the interval lengths in stream order (else empty).
  std::vector<int64_t> host_wait_intervals_ns, kernel_wait_intervals_ns, other_intervals_ns;
  int64_t total_ns() const { return host_wait_ns + kernel_wait_ns + other_ns; }
  // HTA idle_time_ratio: category time / total idle time on the stream.
  double ratio(int64_t category_ns) const {
    return total_ns() ? double(category_ns) / double(total_ns()) : 0.0;
  }
};
std::vector<IdleTimeBreakdown> idle_time_breakdown(const CaptureData& data,
                                                   const IdleTimeOptions& options = {});

// ---- HTA get_cuda_kernel_launch_stats ---------------------------------------------------------
// One record per GPU event whose correlation id matches a runtime call named in `launch_apis`
// (and, with include_memory_events, `memory_apis`).
struct LaunchStatisticsOptions {
  int64_t runtime_cutoff_ns = 50'000;        // HTA runtime_cutoff, 50 µs
  int64_t launch_delay_cutoff_ns = 100'000;  // HTA launch_delay_cutoff, 100 µs
  bool include_memory_events = true;         // HTA default
  // HTA 0.5.0's launch names (cuda_kernel_analysis.py), MTIA's included.
  std::vector<std::string> launch_apis = {"cudaLaunchKernel", "cudaLaunchKernelExC",
                                          "runFunction - job_prep_and_submit_for_execution"};
  std::vector<std::string> memory_apis = {"cudaMemcpyAsync", "cudaMemsetAsync"};
  bool hta_last_step_filter = true;  // HtaStepFilter
};
struct LaunchRecord {
  int64_t correlation = 0;
  uint32_t gpu_index = 0;      // index into CaptureData::gpu
  uint32_t runtime_index = 0;  // index into CaptureData::runtime
  int32_t device = 0, stream = 0;
  int64_t cpu_start = 0, cpu_duration_ns = 0;  // the runtime call (HTA cpu_duration)
  int64_t gpu_start = 0, gpu_duration_ns = 0;  // the GPU event (HTA gpu_duration)
  // Launch delay: GPU start − end of the runtime call (queueing time), unclipped. HTA 0.5.0
  // clips it at 0 (max(0, ...)); older HTA code computed ts_gpu − ts_cpu + dur_cpu, kept below.
  int64_t launch_delay_ns() const { return gpu_start - (cpu_start + cpu_duration_ns); }
  int64_t hta_launch_delay_column_ns() const { return gpu_start - cpu_start + cpu_duration_ns; }
  // GPU start − runtime-call start.
  int64_t start_to_start_ns() const { return gpu_start - cpu_start; }
};
struct LaunchStatistics {
  std::vector<LaunchRecord> launches;  // in GPU start order
  // HTA's three outlier groups (visualize_cuda_kernel_launch_stats):
  int64_t short_kernels = 0;     // cpu_duration <= runtime_cutoff and gpu_duration < cpu_duration
  int64_t runtime_outliers = 0;  // cpu_duration > runtime_cutoff
  int64_t launch_delay_outliers = 0;   // launch_delay_ns() > launch_delay_cutoff
  int64_t short_kernel_gpu_ns = 0;     // GPU time of the short kernels
  int64_t short_kernel_cpu_ns = 0;     // launch-call time of the short kernels
  int64_t launch_delay_excess_ns = 0;  // sum of (delay − cutoff) over launch-delay outliers
  // Quantiles of launch_delay_ns() (nearest rank); 0 without launches.
  int64_t launch_delay_p50_ns = 0, launch_delay_p95_ns = 0, launch_delay_max_ns = 0;
  // HTA's mean launch delay: the mean of max(0, launch_delay_ns()) (HTA 0.5.0 clips at 0);
  // 0 without launches.
  double launch_delay_mean_ns = 0;
};
LaunchStatistics launch_statistics(const CaptureData& data,
                                   const LaunchStatisticsOptions& options = {});

// GPU utilization (the one figure of that name): gpu_utilization.h, included here.

// ---- Kernel summary (`nsys stats cuda_gpu_kern_sum`: sums, not unions) ------------------------
struct KernelSummary {
  int64_t name_id = 0;
  std::string name;
  WorkClass work_class = WorkClass::computation;
  int64_t count = 0;
  int64_t total_ns = 0, min_ns = 0, max_ns = 0;
  double mean_ns() const { return count ? double(total_ns) / double(count) : 0.0; }
};
// Kernels only (not memcpy/memset), by total time descending, at most `limit` (0 = all).
std::vector<KernelSummary> kernel_summary(const CaptureData& data, size_t limit = 0);

// ---- Per-step times ---------------------------------------------------------------------------
// The counted steps' durations (counted_steps(): host ProfilerStep ranges but HTA's last one).
// Quantiles are nearest-rank
// (quantile() below): p99 of fewer than 100 steps is the slowest step. jitter = std / mean
// (coefficient of variation, sample std with ddof = 1; 0 with one step).
struct StepStats {
  int64_t count = 0;
  int64_t median_ns = 0, mean_ns = 0, max_ns = 0, min_ns = 0;
  int64_t p90_ns = 0, p99_ns = 0;
  double std_ns = 0, jitter = 0;
};
StepStats step_stats(const CaptureData& data);
StepStats step_stats(const std::vector<int64_t>& durations);

// Nearest-rank quantile of a sample (q in [0, 1]); sorts a copy. 0 for an empty sample.
int64_t quantile(std::vector<int64_t> values, double q);

}  // namespace fleetscope::analyzer
