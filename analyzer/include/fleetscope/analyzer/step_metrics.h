// Per-iteration metrics: the TensorBoard profiler plugin's steps and step-time breakdown, and the
// memory each iteration uses. All times in ns.
//
// Steps follow the plugin (pytorch/kineto tb_plugin torch_tb_profiler/profiler/event_parser.py,
// StepParser): the recorded iterations (ProfilerStep#N), or, without any, one step "0" spanning the
// CPU ops; then, when any CUDA runtime call inside a step launched GPU work, each step moves to the
// device side (_find_device_steps/_update_steps_duration):
//   start = max(previous step's end, host start)   (the first step's "previous end" is the latest
//           end, before the first step's first GPU event, of GPU work not launched inside any step)
//   end   = max(host end, last end of the GPU work launched by runtime calls lying inside the host
//           step), never before start;
// and trailing steps that launched no GPU work are dropped from the overview, as is the last step
// when it launched fewer than 80 % of the GPU events of the one before (the profiler may have
// missed its kernels). Runtime calls are CUDA runtime API calls; driver API calls (cu* names) are
// ignored, as the plugin ignores the cuda_driver category.
//
// The step breakdown is the plugin's overview (overall_parser.py, OverallParser.Statistics): each
// instant of the step is charged to the first role active at it, in the priority order kernel,
// memcpy, memset, communication, runtime, DataLoader, CPU op, other (event_parser.py ProfileRole),
// over the union of the role's ranges on every device and thread:
//   kernel        GPU kernels that are not communication kernels;
//   memcpy/memset GPU memcpy/memset activities;
//   communication communication kernels (WorkClass::communication, HTA's ^nccl.*Kernel name rule —
//                 the plugin instead marks kernels launched under an nccl:* op by external id) and
//                 CPU ops named nccl:/gloo: broadcast, reduce, all_reduce, all_gather,
//                 reduce_scatter;
//   runtime       CUDA runtime API calls;
//   DataLoader    CPU ops named enumerate(DataLoader)#...__next__ or enumerate(DataPipe)#...;
//   CPU op        every other CPU op except ProfilerStep#N (CaptureData does not keep the op
//                 category, so python_function rows, which the plugin skips, count here);
//   other         the rest of the step.
// The parts sum to the step time.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "fleetscope/analyzer/capture_data.h"
#include "fleetscope/analyzer/consolidation.h"

namespace fleetscope::analyzer {

struct PluginStep {
  int64_t step = 0;                 // iteration number (0 for the CPU-op span without iterations)
  Interval host;                    // as recorded on the CPU
  Interval window;                  // the plugin's step after the device-side adjustment
  int64_t launched_gpu_events = 0;  // GPU events launched by runtime calls inside `host`
  bool in_overview = true;          // false: dropped by the plugin's tail-step removal
};

struct PluginSteps {
  std::vector<PluginStep> steps;  // in start order
  bool from_cpu_ops = false;      // no iterations: one step over the CPU ops
  bool device_adjusted = false;   // some runtime call inside a step launched GPU work
  // [first start, last end] of the steps kept in the overview: the plugin's steps span (the
  // denominator of its GPU utilization). nullopt without steps.
  std::optional<Interval> span() const;
};
PluginSteps plugin_steps(const CaptureData& data);

struct StepBreakdown {
  int64_t step = 0;
  Interval window;  // PluginStep::window
  bool in_overview = true;
  int64_t step_ns = 0;  // window length
  int64_t kernel_ns = 0, memcpy_ns = 0, memset_ns = 0, communication_ns = 0, runtime_ns = 0;
  int64_t dataloader_ns = 0, cpu_op_ns = 0, other_ns = 0;
};
// One row per PluginSteps step.
std::vector<StepBreakdown> step_breakdown(const CaptureData& data);
std::vector<StepBreakdown> step_breakdown(const CaptureData& data, const PluginSteps& steps);

// The DataLoader's share of step time as the step table and the profiler plugin's overview show
// it: Σ dataloader_ns / Σ step_ns over the steps in the overview (the figure the
// dataloader_bottleneck finding quotes); none without such steps.
struct DataLoaderShare {
  int64_t steps = 0, step_ns = 0, dataloader_ns = 0;
  double share() const { return step_ns > 0 ? double(dataloader_ns) / double(step_ns) : 0.0; }
};
std::optional<DataLoaderShare> dataloader_share(const std::vector<StepBreakdown>& steps);

// ---- Memory per iteration ---------------------------------------------------------------------
// Per device (memory_events with deviceId >= 0, every process), with consolidation.h's
// memory_footprint definitions so that these numbers are the sharer's inputs: the allocated level
// is total_allocated when reported, else the running sum of bytes; iterations are the recorded
// host iterations [start, end).
//   per iteration: baseline = level just before the iteration starts; peak = highest level inside
//     it (at least the baseline); ephemeral peak = peak − baseline;
//   per device: peak_bytes = highest level in the capture; persistent_bytes P = highest baseline;
//     ephemeral_peak_bytes T = highest per-iteration ephemeral peak; baseline_bytes = lowest
//     baseline (the memory the job never gives back between iterations). Without iterations:
//     P = baseline = the level after the last event, T = peak − P.
struct IterationMemory {
  int64_t step = 0;
  Interval window;
  int64_t baseline_bytes = 0, peak_bytes = 0, ephemeral_peak_bytes = 0;
  int64_t reserved_peak_bytes = 0;               // highest total_reserved in the iteration
  int64_t allocations = 0, allocated_bytes = 0;  // churn: allocation events and their bytes
};
struct DeviceMemory {
  int32_t device = 0;
  int64_t events = 0;  // memory events on the device; 0 = not measured
  int64_t peak_bytes = 0, baseline_bytes = 0, persistent_bytes = 0, ephemeral_peak_bytes = 0;
  double ephemeral_peak_stddev_bytes = -1.0;  // memory_footprint's; -1 with fewer than two
  int64_t reserved_peak_bytes = 0;            // memory_footprint's (0: never reported)
  double fragmentation = 0;                   // 1 − peak allocated / reserved peak
  int64_t allocations = 0, allocated_bytes = 0;
  bool totals_known = true;  // MemoryFootprint::totals_known: false = P, peak are lower bounds
  std::vector<IterationMemory> iterations;
};
// One row per device that has memory events or GPU events (events == 0 when unmeasured).
std::vector<DeviceMemory> memory_by_device(const CaptureData& data);

}  // namespace fleetscope::analyzer
