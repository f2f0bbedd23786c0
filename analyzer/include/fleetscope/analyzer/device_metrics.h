// Per-device metrics beyond metrics.h, each with one definition (ns; the denominator stated).
//
//   busy_kernels_ns   |∪ kernels on the device| (every kernel, NCCL included), whole capture.
//   busy_all_ns       |∪ kernels, memcpys and memsets on the device| (CaptureData::busy_by_device).
//   span_ns           last GPU-event end − first GPU-event start on the device (kernels, memcpys,
//                     memsets; no sync waits and no HTA step filter, unlike temporal_breakdown).
//   idle_ns           span_ns − busy_all_ns.
//   kernel_time_by_type  HTA get_gpu_kernel_breakdown (hta/analyzers/breakdown_analysis.py):
//                     per HTA kernel type (hta_kernel_type(): hta/utils/utils.py get_kernel_type),
//                     |∪ GPU events of the type| over the device's GPU events and stream-carrying
//                     sync waits (HTA's stream != -1 rows) AFTER HTA's last-step filter
//                     (HtaStepFilter, as HTA applies at load and as comm_comp_overlap does).
//                     Overlap inside a type counts once; time where two types overlap counts in
//                     both (kernel_type_states splits it). OTHER is HTA's fourth type (sync waits,
//                     names containing "Sync" or a non-leading "Memcpy"), which HTA never reports.
//   kernel_time_by_type_unfiltered  the same without the last-step filter (every GPU event of the
//                     capture): what fleetscope reported before it followed HTA.
//   kernel_type_states HTA's kernel_type_df with include_memory_kernels=True: the time in each
//                     combination of COMPUTATION / COMMUNICATION / MEMORY running ("COMPUTATION",
//                     "COMPUTATION overlapping MEMORY", ...); the states partition the union.
//   comm_comp_overlap HTA get_comm_comp_overlap (hta/analyzers/communication_analysis.py):
//                     |∪ communication ∩ ∪ computation| / |∪ communication| over the device's GPU
//                     events and stream-carrying sync waits, with HTA's last-step filter
//                     (HtaStepFilter) by default; undefined without communication kernels.
//   kernel_utilization_steps  the TensorBoard profiler plugin's GPU utilization
//                     (tb_plugin torch_tb_profiler/profiler/gpu_metrics_parser.py,
//                     calculate_gpu_utilization): |∪ kernels ∩ steps span| / |steps span|, with the
//                     plugin's steps span (step_metrics.h PluginSteps::span). Kernels only — unlike
//                     metrics.h gpu_utilization(), which counts memcpys and memsets and uses the
//                     recorded step span.
//   est_sm_efficiency the plugin's "Est. SM Efficiency" (calculate_approximated_sm_efficiency):
//                     each kernel contributes blocks per SM = grid blocks / the device's SM count
//                     (Kineto's "blocks per SM" kernel arg, computed the same way from
//                     CaptureData's grid_blocks and TARGET_INFO_GPU.smCount); concurrent kernels'
//                     values are summed and capped at 1 (range_utils.py merge_ranges_with_value);
//                     the result is Σ value·duration inside the steps span / |steps span|.
//   est_achieved_occupancy the plugin's "Est. Achieved Occupancy" (calculate_occupancy), in
//                     percent: Σ occupancy·d / Σ d over kernels with Kineto's per-kernel
//                     "est. achieved occupancy %" (GpuEvents::est_occupancy), d = the part of the
//                     kernel inside the steps span. Kineto computes that value with the CUDA
//                     occupancy calculator at trace time; it cannot be rebuilt from the store.
// A value that cannot be computed is nullopt with a `*_needs` text naming the missing data.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/analyzer/capture_data.h"

namespace fleetscope::analyzer {

// HTA's kernel types (hta/utils/utils.py KernelType, get_kernel_type), decided by name only:
// COMMUNICATION ^nccl.*Kernel; MEMORY ^Memcpy|^Memset|^dma (MTIA DMA); COMPUTATION when
// is_compute_kernel (not (^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)); else OTHER. As with
// Python's re.match, '.' stops at a newline. classify_gpu_work (capture_data.h) maps it to
// WorkClass.
enum class HtaKernelType : uint8_t { computation, communication, memory, other };
HtaKernelType hta_kernel_type(const std::string& name);

struct KernelTimeByType {
  int64_t computation_ns = 0, communication_ns = 0, memory_ns = 0, other_ns = 0;
};

// Per-device kernel type breakdown; `hta_last_step_filter` false = every event of the capture.
KernelTimeByType kernel_time_by_type(const CaptureData& data, int32_t device,
                                     bool hta_last_step_filter = true);
// HTA's overlap states on the device (state name -> ns), with the same filter.
std::map<std::string, int64_t> kernel_type_states(const CaptureData& data, int32_t device,
                                                  bool hta_last_step_filter = true);
// The pieces HTA sums into the states: between consecutive type-union edges (in time order) where
// at least one type runs. HTA casts each piece's length to int µs (astype(int), truncation), so on
// float-timestamp traces its states are below the exact ones by < 1 µs per piece.
struct KernelTypeSegment {
  std::string state;
  Interval span;
};
std::vector<KernelTypeSegment> kernel_type_segments(const CaptureData& data, int32_t device,
                                                    bool hta_last_step_filter = true);

struct CommCompOverlap {
  int32_t device = 0;
  int64_t communication_ns = 0;  // |∪ communication|
  int64_t overlap_ns = 0;        // |∪ communication ∩ ∪ computation|
  std::optional<double> ratio() const {
    if (communication_ns == 0) return std::nullopt;
    return double(overlap_ns) / double(communication_ns);
  }
};
// One row per device with GPU events or sync waits (after the filter).
std::vector<CommCompOverlap> comm_comp_overlap(const CaptureData& data,
                                               bool hta_last_step_filter = true);

struct DeviceMetrics {
  int32_t device = 0;
  Interval span;
  int64_t span_ns = 0, busy_kernels_ns = 0, busy_all_ns = 0, idle_ns = 0;
  KernelTimeByType kernel_time_by_type;             // HTA's definition (last-step filter)
  KernelTimeByType kernel_time_by_type_unfiltered;  // every GPU event of the capture
  std::map<std::string, int64_t> kernel_type_states;
  CommCompOverlap comm_comp_overlap;
  std::optional<Interval> steps_span;  // the plugin's, the same for every device
  int64_t kernel_busy_in_steps_ns = 0;
  std::optional<double> kernel_utilization_steps;
  std::string kernel_utilization_steps_needs;
  std::optional<double> est_sm_efficiency;
  std::string est_sm_efficiency_needs;
  std::optional<double> est_achieved_occupancy;  // percent
  std::string est_achieved_occupancy_needs;
};
// One row per device with GPU events, in device order.
std::vector<DeviceMetrics> device_metrics(const CaptureData& data);

// ---- Building blocks (also used by the tests against the plugin's expected output) ------------
// Union of the device's kernels (kernels only).
IntervalSet kernel_busy(const CaptureData& data, int32_t device);
// TARGET_INFO_GPU.smCount of the device, when known and positive.
std::optional<int32_t> sm_count(const CaptureData& data, int32_t device);

struct ValueRange {
  Interval range;
  double value = 0;
};
// The plugin's approximated SM efficiency ranges of one device over the whole capture
// (merge_ranges_with_value of the kernels' blocks per SM): piecewise-constant, capped at 1.
// Empty without an SM count or launch shapes.
std::vector<ValueRange> sm_efficiency_ranges(const CaptureData& data, int32_t device);

// The plugin's GPU utilization timeline (calculate_gpu_utilization): `range` cut into buckets of a
// power-of-ten µs, the smallest giving at most 100 buckets (the last one takes the remainder);
// each bucket's value is |∪ kernels ∩ bucket| / |bucket|. The plugin uses the trace's
// "PyTorch Profiler (0)" span as the range, which the store does not keep.
struct UtilizationBucket {
  Interval bucket;
  double utilization = 0;
};
// The same buckets over a device's kernel busy intervals (kernel_busy()), for a caller that keeps
// those and not the whole capture (the GUI's chart follows the view after the capture's events
// are freed).
std::vector<UtilizationBucket> gpu_utilization_timeline(const IntervalSet& kernel_busy,
                                                        Interval range);
std::vector<UtilizationBucket> gpu_utilization_timeline(const CaptureData& data, int32_t device,
                                                        Interval range);

}  // namespace fleetscope::analyzer
