#pragma once
// Hyper-parameter tuning studies: many small trials of one model, and the three ways the
// simulator places them (docs/sharer.md, "Hyper-parameter tuning"): one trial per GPU (exclusive
// FIFO), Salus's PACK (as few GPUs as possible, lanes, round robin) and Fluid-style water-filling
// (spread over every GPU, each filled up to one GPU of utilization, refilled as trials finish).

#include <cstdint>
#include <string>
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

// The water-filling plan of a study (`share plan --hpo`): where each trial runs and when. It is
// the water-filling run of compare_hpo (the same function makes both), read per trial: the
// first wave fills every GPU up to one GPU of utilization, each in a lane of its own; every
// later trial takes the share a finished one freed, on the lowest-filled GPU.
struct HpoTrialPlacement {
  int64_t trial = 0;  // SimJob::id
  std::string name;
  int gpu = -1;   // GPU index
  int lane = -1;  // lane id on that GPU
  double start_s = 0;
  double finish_s = 0;
  bool first_wave = false;  // started with the study (not waiting for a trial to finish)
};
struct HpoPlan {
  SimResult waterfill;                    // the run the placements come from
  std::vector<HpoTrialPlacement> trials;  // by start time, then GPU
  int first_wave = 0;                     // trials started at the study's start
  int max_trials_per_gpu = 0;             // the most trials a GPU runs at once in the first wave
};
HpoPlan plan_hpo(const std::vector<SimJob>& trials, SimConfig config);

}  // namespace fleetscope::sharer
