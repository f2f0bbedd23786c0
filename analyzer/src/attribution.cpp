#include "fleetscope/analyzer/attribution.h"

#include <set>

#include "fleetscope/analyzer/metrics.h"

namespace fleetscope::analyzer {

int64_t workflow_of_process(const CaptureData& data, int64_t global_pid) {
  for (const auto& p : data.processes)
    if (p.globalPid == global_pid && p.workflow_id) return *p.workflow_id;
  // nsys-encoded pids may arrive with a thread part; compare the pid alone.
  for (const auto& p : data.processes)
    if (global_pid >= 0 && p.pid == store::pid_of(global_pid) && p.workflow_id)
      return *p.workflow_id;
  if (data.workflows.size() == 1) return data.workflows.front().id;
  return kUnknownWorkflow;
}

std::map<std::pair<int64_t, int32_t>, std::vector<uint32_t>> events_by_workflow_device(
    const CaptureData& data) {
  std::map<int64_t, int64_t> cache;  // globalPid → workflow
  std::map<std::pair<int64_t, int32_t>, std::vector<uint32_t>> out;
  for (uint32_t i = 0; i < data.gpu.size(); ++i) {
    const int64_t pid = data.gpu.global_pid[i];
    auto it = cache.find(pid);
    if (it == cache.end()) it = cache.emplace(pid, workflow_of_process(data, pid)).first;
    out[{it->second, data.gpu.device[i]}].push_back(i);
  }
  return out;
}

WorkflowInfo workflow_info(const CaptureData& data, int64_t workflow_id) {
  WorkflowInfo info;
  for (const auto& w : data.workflows)
    if (w.id == workflow_id) {
      info.id = w.id;
      info.name = w.name;
      info.user = w.user.value_or("");
      info.labels_json = w.labels_json.empty() ? "{}" : w.labels_json;
      return info;
    }
  info.name = data.capture.source_path.empty() ? "capture " + std::to_string(data.capture.id)
                                               : data.capture.source_path;
  return info;
}

std::map<std::string, std::vector<int64_t>> step_durations_by_workflow(const CaptureData& data) {
  std::map<int64_t, std::string> names;  // workflow id -> name
  std::map<std::string, std::vector<int64_t>> out;
  for (const store::Iteration* it : counted_steps(data)) {
    const int64_t workflow = workflow_of_process(data, it->globalPid.value_or(-1));
    auto name = names.find(workflow);
    if (name == names.end())
      name = names.emplace(workflow, workflow_info(data, workflow).name).first;
    out[name->second].push_back(it->end - it->start);
  }
  return out;
}

}  // namespace fleetscope::analyzer
