// A lane's members with their GPU phases stretched by the parallel (interference) factor and
// their host phases not: the one definition contended_time_sharing (interference.cpp) and
// ordered_time_sharing (turn_model.cpp) both build on.
#pragma once

#include <vector>

#include "fleetscope/sharer/interference.h"

namespace fleetscope::sharer {

inline std::vector<LaneMember> stretch_gpu_phases(const std::vector<LaneMember>& members,
                                                  double parallel) {
  std::vector<LaneMember> stretched;
  stretched.reserve(members.size());
  for (const auto& member : members) {
    const double scale = member.utilization * parallel + 1.0 - member.utilization;
    stretched.push_back({member.utilization * parallel / scale, member.iteration_s * scale});
  }
  return stretched;
}

}  // namespace fleetscope::sharer
