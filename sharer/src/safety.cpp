#include "fleetscope/sharer/safety.h"

#include <algorithm>
#include <cmath>

namespace fleetscope::sharer {

double SafetyMargin::variance_of(const MemoryDemand& demand) const {
  double sigma = demand.peak_stddev_bytes;
  if (sigma < 0) {
    sigma = default_relative_stddev *
            static_cast<double>(demand.persistent_bytes + demand.ephemeral_peak_bytes);
  }
  return sigma * sigma;
}

void LaneLoad::add(const MemoryDemand& demand, const SafetyMargin& margin) {
  sum_persistent_bytes += demand.persistent_bytes;
  max_ephemeral_bytes = std::max(max_ephemeral_bytes, demand.ephemeral_peak_bytes);
  sum_variance += margin.variance_of(demand);
  ++jobs;
}

static int64_t required(int64_t sum_p, int64_t max_t, double variance, const SafetyMargin& m) {
  return required_bytes_for(sum_p, max_t, variance, m);
}

int64_t required_bytes(const LaneLoad& load, const SafetyMargin& margin) {
  if (load.jobs == 0) return 0;
  return required(load.sum_persistent_bytes, load.max_ephemeral_bytes, load.sum_variance, margin);
}

int64_t required_bytes_with(const LaneLoad& load, const MemoryDemand& extra,
                            const SafetyMargin& margin) {
  return required(load.sum_persistent_bytes + extra.persistent_bytes,
                  std::max(load.max_ephemeral_bytes, extra.ephemeral_peak_bytes),
                  load.sum_variance + margin.variance_of(extra), margin);
}

bool satisfies_safety(const std::vector<MemoryDemand>& jobs, int64_t lane_capacity_bytes,
                      const SafetyMargin& margin) {
  int64_t sum_p = 0;
  int64_t max_t = 0;
  double variance = 0;
  for (const auto& job : jobs) {
    sum_p += job.persistent_bytes;
    max_t = std::max(max_t, job.ephemeral_peak_bytes);
    variance += margin.variance_of(job);
  }
  if (jobs.empty()) return true;
  return required(sum_p, max_t, variance, margin) <= lane_capacity_bytes;
}

}  // namespace fleetscope::sharer
