// The analyzer's loaded capture as the GPU-type advisor's input (sharer/gpu_advice.h): GPU
// activities with their launching call's start, GPU names and step intervals. The advisor's
// model stays in the sharer; this file only maps one capture's arrays onto its input.
#include <unordered_map>
#include <unordered_set>

#include "fleetscope/analyzer/loader.h"
#include "fleetscope/cli/integrations.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::cli {

sharer::CapturedWork captured_work_from_database(const std::string& db_path,
                                                 std::optional<int64_t> capture) {
  store::Reader reader(db_path);
  const int64_t capture_id = analyzer::resolve_capture_id(reader, capture);
  analyzer::CaptureParts parts = analyzer::CaptureParts::gpu_only();
  parts.runtime = true;  // the launching call's start places a kernel in the step that issued it
  const analyzer::CaptureData data = analyzer::load_capture(reader, capture_id, {}, parts);

  sharer::CapturedWork work;
  work.source = db_path + "#capture" + std::to_string(capture_id);
  for (const auto& gpu : data.gpus) work.gpu_names[gpu.id] = gpu.name;
  std::unordered_map<int64_t, uint32_t> name_index;
  std::unordered_set<int64_t> gpu_pids;
  for (size_t i = 0; i < data.gpu.size(); ++i) {
    sharer::CapturedActivity activity;
    activity.start_ns = data.gpu.start[i];
    activity.end_ns = data.gpu.end[i];
    const int64_t call = data.launch_call_of.empty() ? -1 : data.launch_call_of[i];
    activity.issued_ns = call >= 0 ? data.runtime.start[static_cast<size_t>(call)] : -1;
    activity.device = data.gpu.device[i];
    switch (data.gpu.kind[i]) {
      case analyzer::GpuEventKind::kernel:
        activity.kind = sharer::ActivityKind::kernel;
        break;
      case analyzer::GpuEventKind::memset:
        activity.kind = sharer::ActivityKind::memset;
        break;
      case analyzer::GpuEventKind::memcpy: {
        const int8_t copy = data.gpu.copy_kind[i];
        const bool on_device = copy == store::kMemcpyDtoD || copy == store::kMemcpyPtoP;
        activity.kind =
            on_device ? sharer::ActivityKind::device_copy : sharer::ActivityKind::host_copy;
        break;
      }
    }
    activity.communication = data.gpu.work_class[i] == analyzer::WorkClass::communication;
    const int64_t name_id = data.gpu.name_id[i];
    auto [it, added] = name_index.emplace(name_id, static_cast<uint32_t>(work.names.size()));
    if (added) work.names.push_back(data.name(name_id));
    activity.name = it->second;
    if (data.gpu.global_pid[i] >= 0) gpu_pids.insert(data.gpu.global_pid[i]);
    work.activities.push_back(activity);
  }
  // Steps of the processes that ran GPU work (and steps without a process).
  for (const auto& step : data.iterations) {
    if (step.globalPid && !gpu_pids.empty() && !gpu_pids.count(*step.globalPid)) continue;
    work.steps.emplace_back(step.start, step.end);
  }
  return work;
}

}  // namespace fleetscope::cli
