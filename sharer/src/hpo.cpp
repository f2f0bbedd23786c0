#include "fleetscope/sharer/hpo.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "fleetscope/sharer/policy.h"

namespace fleetscope::sharer {

std::vector<SimJob> hpo_trials(const WorkloadProfile& profile, int trials, double trial_seconds,
                               double utilization) {
  if (trials < 1 || !(trial_seconds > 0) || !(utilization > 0 && utilization <= 1)) {
    throw std::invalid_argument("a study needs >= 1 trial, a positive length and u in (0, 1]");
  }
  std::vector<SimJob> jobs;
  jobs.reserve(static_cast<size_t>(trials));
  for (int i = 0; i < trials; ++i) {
    SimJob job;
    job.id = i;
    job.name = "trial" + std::to_string(i);
    job.model = profile.model;
    job.batch_size = profile.batch_size;
    job.iteration_s = profile.iteration_s;
    job.iterations = std::max<int64_t>(1, std::llround(trial_seconds / profile.iteration_s));
    job.memory = MemoryDemand{profile.persistent_bytes, profile.ephemeral_bytes, -1};
    job.utilization = utilization;
    jobs.push_back(std::move(job));
  }
  return jobs;
}

HpoComparison compare_hpo(const std::vector<SimJob>& trials, SimConfig config) {
  HpoComparison comparison;
  config.lanes = false;
  comparison.one_per_gpu = simulate(trials, FifoExclusivePolicy{}, config);
  config.lanes = true;
  comparison.pack = simulate(trials, PackPolicy{}, config);
  comparison.waterfill = simulate(trials, WaterFillPolicy{}, config);
  return comparison;
}

}  // namespace fleetscope::sharer
