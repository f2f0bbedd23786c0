// HTA get_gpu_kernels_with_user_annotations (hta/analyzers/breakdown_analysis.py,
// holistictraceanalysis 0.5.0): each GPU event attributed to the innermost GPU user annotation
// over it.
//
// HTA's rule (_associate_gpu_kernels_with_user_annotations): the GPU rows of GPUKernelFilter
// (kernels, copies, memsets and the sync waits that carry a stream), and the Kineto
// gpu_user_annotation ranges (CaptureData::gpu_annotations, drawn on a device's stream: pid =
// device, tid = stream); both after HTA's last-step filter. The annotations of one (device,
// stream) are visited longest first and each assigns its name to every GPU event of that
// (device, stream) overlapping it ([start, end) intervals: event.start < annotation.end and
// annotation.start < event.end); the last assignment stands, so an event gets the shortest
// annotation over it, the leaf of the annotation stack. Among annotations of equal length HTA's
// order is its unstable sort's; here the later-starting one is visited last.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "fleetscope/analyzer/capture_data.h"

namespace fleetscope::analyzer {

struct KernelAnnotations {
  // Per data.gpu / data.gpu_syncs index: the index into data.gpu_annotations, -1 for none (also
  // for rows HTA's last-step filter drops). 32 bits: one per GPU event, 40 MB for 10 M kernels.
  std::vector<int32_t> of_gpu, of_sync;
  int64_t rows = 0;  // GPU rows considered (kept by the last-step filter)
};

KernelAnnotations gpu_kernels_with_user_annotations(const CaptureData& data,
                                                    bool hta_last_step_filter = true);

// `analyze --format json`'s "gpu_kernels_with_user_annotations" (docs/analyzer.md): how many GPU
// rows each annotation name got ("by_annotation", by kernel time descending: kernels,
// kernel_time_ns), the rows with none; with `per_kernel` also "kernels", every row in time order
// (start_ns, device, stream, name, user_annotation or null).
nlohmann::json gpu_kernels_with_user_annotations_json(const CaptureData& data, bool per_kernel);

}  // namespace fleetscope::analyzer
