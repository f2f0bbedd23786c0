// Which job (workflow) each GPU event belongs to: GPU event globalPid → processes.workflow_id.
// Events without a known process fall back to the file's only workflow, else to "unknown" (-1).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fleetscope/analyzer/capture_data.h"

namespace fleetscope::analyzer {

inline constexpr int64_t kUnknownWorkflow = -1;

struct WorkflowInfo {
  int64_t id = kUnknownWorkflow;
  std::string name;  // the capture's source when unknown
  std::string user;
  std::string labels_json = "{}";
};

// (workflow id, device) → indexes into data.gpu, in start order.
std::map<std::pair<int64_t, int32_t>, std::vector<uint32_t>> events_by_workflow_device(
    const CaptureData& data);

// Workflow id of a process (nsys-encoded globalPid), with the fallback above.
int64_t workflow_of_process(const CaptureData& data, int64_t global_pid);

WorkflowInfo workflow_info(const CaptureData& data, int64_t workflow_id);

// The counted steps' durations (counted_steps(), metrics.h: HTA's steps; end − start, in start
// order) per workflow name, each attributed through its process (workflow_of_process): the input
// of the per-workflow step-time tail (step_stats, metrics.h) that `fleetscope fleet` and the
// daemon's workflow_metrics report.
std::map<std::string, std::vector<int64_t>> step_durations_by_workflow(const CaptureData& data);

}  // namespace fleetscope::analyzer
