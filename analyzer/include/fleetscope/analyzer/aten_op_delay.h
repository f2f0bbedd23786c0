// Kernels launched per ATen op and their delays: HTA get_aten_op_kernels_and_delay
// (hta/analyzers/cuda_kernel_analysis.py, CudaKernelAnalysis.get_aten_op_kernels_and_delay,
// holistictraceanalysis 0.5.0).
//
// HTA's definition, reproduced with its quirks:
//   - launches: the runtime/driver calls whose name matches, from its start,
//     (cuda.*LaunchKernel)|(cuLaunchKernel)|(runFunction) (KERNEL_LAUNCH_CATEGORY_PATTERN,
//     hta/common/types.py, applied with pandas str.match);
//   - the launching op: among the CPU events whose name starts with "aten::" — on any thread,
//     HTA does not compare threads — those that wrap the call (op start <= call start and op end
//     >= call end), the one that starts last (HTA "deepest"; on a tie the shorter one here, HTA's
//     unstable sort picks either);
//   - per launch with an op and a GPU event: aten_op_delay = call start − op start, runtime_delay
//     = GPU event start − call start;
//   - grouped per op instance (thread, name, start): its kernels' names in launch order, and the
//     delays of its first launch; then per (op name, kernel sequence "k1 -> k2"): the number of
//     instances and the mean of those first delays. Sorted by count, descending.
// HTA's last-step filter (HtaStepFilter) applies first, as HTA applies it at load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleetscope/analyzer/capture_data.h"

namespace fleetscope::analyzer {

struct AtenOpKernels {
  std::string op;                    // aten_op_name
  std::vector<std::string> kernels;  // kernel_sequence, in launch order
  int64_t count = 0;                 // occurrence_count
  double avg_aten_op_launch_delay_ns = 0, avg_runtime_delay_ns = 0;
};

// By count descending, then op name and kernel sequence.
std::vector<AtenOpKernels> aten_op_kernels_and_delay(const CaptureData& data,
                                                     bool hta_last_step_filter = true);

}  // namespace fleetscope::analyzer
