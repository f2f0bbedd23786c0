#pragma once
// Hyper-parameter tuning studies: many small trials of one model, and the three ways the
// simulator places them (docs/sharer.md, "Hyper-parameter tuning"): one trial per GPU (exclusive
// FIFO), Salus's PACK (as few GPUs as possible, lanes, round robin) and Fluid-style water-filling
// (spread over every GPU, each filled up to one GPU of utilization, refilled as trials finish).

#include <vector>

#include "fleetscope/sharer/simulator.h"
#include "fleetscope/sharer/workload.h"

namespace fleetscope::sharer {

// `trials` trials of `profile` submitted at once, each `trial_seconds` of work alone
// (iterations = trial_seconds / the profile's iteration time, at least 1), memory P and T from
// the profile, at `utilization`.
std::vector<SimJob> hpo_trials(const WorkloadProfile& profile, int trials, double trial_seconds,
                               double utilization);

struct HpoComparison {
  SimResult one_per_gpu;  // exclusive FIFO
  SimResult pack;         // Salus PACK, lanes on
  SimResult waterfill;    // Fluid-style, lanes on
};
// The same trials under the three placements on `config.gpus` GPUs (config.lanes is set per run).
HpoComparison compare_hpo(const std::vector<SimJob>& trials, SimConfig config);

}  // namespace fleetscope::sharer
