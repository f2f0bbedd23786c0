#include "fleetscope/sharer/safety.h"

#include <algorithm>
#include <cmath>

namespace fleetscope::sharer {

double SafetyMargin::stddev_of(const MemoryDemand& demand) const {
  if (demand.peak_stddev_bytes >= 0) return demand.peak_stddev_bytes;
  return default_relative_stddev *
         static_cast<double>(demand.persistent_bytes + demand.ephemeral_peak_bytes);
}

int64_t SafetyMargin::guarded_ephemeral(const MemoryDemand& demand) const {
  return demand.ephemeral_peak_bytes + static_cast<int64_t>(std::ceil(z * stddev_of(demand)));
}

void LaneLoad::add(const MemoryDemand& demand, const SafetyMargin& margin) {
  sum_persistent_bytes += demand.persistent_bytes;
  max_ephemeral_bytes = std::max(max_ephemeral_bytes, demand.ephemeral_peak_bytes);
  max_guarded_ephemeral_bytes =
      std::max(max_guarded_ephemeral_bytes, margin.guarded_ephemeral(demand));
  ++jobs;
}

int64_t required_bytes(const LaneLoad& load, const SafetyMargin& margin) {
  if (load.jobs == 0) return 0;
  return required_bytes_for(load.sum_persistent_bytes, load.max_guarded_ephemeral_bytes, margin);
}

int64_t required_bytes_with(const LaneLoad& load, const MemoryDemand& extra,
                            const SafetyMargin& margin) {
  return required_bytes_for(
      load.sum_persistent_bytes + extra.persistent_bytes,
      std::max(load.max_guarded_ephemeral_bytes, margin.guarded_ephemeral(extra)), margin);
}

bool satisfies_safety(const std::vector<MemoryDemand>& jobs, int64_t lane_capacity_bytes,
                      const SafetyMargin& margin) {
  if (jobs.empty()) return true;
  int64_t sum_p = 0;
  int64_t max_guarded = 0;
  for (const auto& job : jobs) {
    sum_p += job.persistent_bytes;
    max_guarded = std::max(max_guarded, margin.guarded_ephemeral(job));
  }
  return required_bytes_for(sum_p, max_guarded, margin) <= lane_capacity_bytes;
}

}  // namespace fleetscope::sharer
