#include "fleetscope/sharer/interference.h"

#include <algorithm>

namespace fleetscope::sharer {

double InterferenceModel::parallel_slowdown(double lane_demand, double gpu_demand) const {
  const double others = std::max(0.0, gpu_demand - lane_demand);
  return std::max(1.0, gpu_demand) * (1.0 + alpha * others);
}

InterferenceModel calibrate_interference(const std::vector<ColocationObservation>& runs,
                                         InterferenceModel prior) {
  // slowdown / max(1, U) - 1 = alpha * others: one-parameter least squares through the origin.
  double xy = 0;
  double xx = 0;
  for (const auto& run : runs) {
    const double total = run.own_utilization + run.others_utilization;
    const double y = run.measured_slowdown / std::max(1.0, total) - 1.0;
    xy += run.others_utilization * y;
    xx += run.others_utilization * run.others_utilization;
  }
  if (xx <= 0) return prior;
  return InterferenceModel{std::max(0.0, xy / xx)};
}

double time_sharing_slowdown(const std::vector<LaneMember>& members, size_t index) {
  if (index >= members.size() || members[index].iteration_s <= 0) return 1.0;
  double gpu_busy_per_round = 0;
  for (const auto& member : members) gpu_busy_per_round += member.utilization * member.iteration_s;
  return std::max(1.0, gpu_busy_per_round / members[index].iteration_s);
}

}  // namespace fleetscope::sharer
