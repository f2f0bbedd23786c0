#include "fleetscope/sharer/hpo.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
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
    job.workload = profile.model;  // one study: every trial runs the same workload
    job.batch_size = profile.batch_size;
    job.iteration_s = profile.iteration_s;
    job.iterations = std::max<int64_t>(1, std::llround(trial_seconds / profile.iteration_s));
    job.memory = MemoryDemand{profile.persistent_bytes, profile.ephemeral_bytes, -1};
    job.utilization = utilization;
    jobs.push_back(std::move(job));
  }
  return jobs;
}

namespace {
// The water-filling run: lanes on, Fluid-style placement (one definition for the comparison and
// the plan).
SimResult waterfill_run(const std::vector<SimJob>& trials, SimConfig config) {
  config.lanes = true;
  return simulate(trials, WaterFillPolicy{}, config);
}
}  // namespace

HpoComparison compare_hpo(const std::vector<SimJob>& trials, SimConfig config) {
  HpoComparison comparison;
  config.lanes = false;
  comparison.one_per_gpu = simulate(trials, FifoExclusivePolicy{}, config);
  config.lanes = true;
  comparison.pack = simulate(trials, PackPolicy{}, config);
  comparison.waterfill = waterfill_run(trials, config);
  return comparison;
}

HpoPlan plan_hpo(const std::vector<SimJob>& trials, SimConfig config) {
  HpoPlan plan;
  plan.waterfill = waterfill_run(trials, config);
  double study_start = std::numeric_limits<double>::infinity();
  for (const auto& trial : trials) study_start = std::min(study_start, trial.submit_s);
  std::map<int, int> first_wave_per_gpu;
  for (const auto& row : plan.waterfill.jobs) {
    HpoTrialPlacement placement;
    placement.trial = row.id;
    placement.name = row.name;
    placement.gpu = row.gpu;
    placement.lane = row.lane;
    placement.start_s = row.start_s;
    placement.finish_s = row.finish_s;
    placement.first_wave = row.start_s == study_start;
    if (placement.first_wave) {
      ++plan.first_wave;
      plan.max_trials_per_gpu = std::max(plan.max_trials_per_gpu, ++first_wave_per_gpu[row.gpu]);
    }
    plan.trials.push_back(std::move(placement));
  }
  std::stable_sort(plan.trials.begin(), plan.trials.end(), [](const auto& a, const auto& b) {
    return a.start_s != b.start_s ? a.start_s < b.start_s : a.gpu < b.gpu;
  });
  return plan;
}

}  // namespace fleetscope::sharer
