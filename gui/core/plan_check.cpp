#include "plan_check.h"

#include <algorithm>
#include <regex>

namespace fleetscope::gui {

std::optional<int32_t> plan_gpu_index(const std::string& gpu) {
  static const std::regex pattern(R"(/gpu(\d{1,6})(\s|$))");
  std::smatch m;
  if (!std::regex_search(gpu, m, pattern)) return std::nullopt;
  return std::stoi(m[1].str());
}

std::string plan_host_mismatch(const sharer::ConsolidationPlan& plan,
                               const DaemonStatusView& host) {
  const std::string where =
      host.hostname.empty() ? std::string("the daemon's host") : host.hostname;
  if (host.devices.empty())
    return "the daemon on " + where + " reports no GPU: this plan cannot be applied there";
  for (const auto& gpu : plan.gpus) {
    const auto index = plan_gpu_index(gpu.gpu);
    if (!index)
      return "the plan's GPU '" + gpu.gpu + "' names no device index: it cannot be matched to " +
             where;
    const bool found = std::any_of(host.devices.begin(), host.devices.end(),
                                   [&](const DaemonDevice& d) { return d.index == *index; });
    if (!found)
      return "the plan's GPU '" + gpu.gpu + "' is not a GPU of " + where + " (it has " +
             std::to_string(host.devices.size()) + "): this plan was made for another host";
  }
  return "";
}

std::vector<std::string> plan_changes(const sharer::ConsolidationPlan& plan) {
  std::vector<std::string> out;
  for (const auto& job : plan.jobs) {
    if (job.to_gpu.empty()) continue;
    char slowdown[32];
    std::snprintf(slowdown, sizeof slowdown, "%.2f", job.predicted_slowdown);
    out.push_back(job.job_id + (job.moved ? " moves to " : " stays on ") + job.to_gpu + ", lane " +
                  std::to_string(job.lane_id) + " (predicted slowdown " + slowdown + "×)");
  }
  for (const auto& gpu : plan.gpus_freed) out.push_back(gpu + " is freed");
  return out;
}

}  // namespace fleetscope::gui
