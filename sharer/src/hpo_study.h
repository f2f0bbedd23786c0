#pragma once
// One hyper-parameter tuning study as `sim --hpo` and `share plan --hpo` read it from their
// flags: the same trials, GPUs and interference model for both, so the plan is the simulator's
// water-filling run of the same study.

#include <set>
#include <string>
#include <vector>

#include "arguments.h"
#include "fleetscope/sharer/interference.h"
#include "fleetscope/sharer/simulator.h"

namespace fleetscope::sharer {

// The flags a study takes (each command adds them to its own).
extern const std::set<std::string> kHpoStudyFlags;

struct HpoStudy {
  int trials = 0;
  std::string model;
  int batch_size = 0;
  double trial_s = 0;
  double utilization = 1;
  std::string utilization_source;  // "default", "--utilization" or the analyzer's capture
  SimConfig config;
  InterferenceCalibration interference;
  std::vector<SimJob> jobs;
};

// Reads --hpo TRIALS --profiles FILE --model MODEL --gpus N [--trial-s S]
// [--utilization U | --trial-db DB] [--interference-alpha A | --calibration RUNS.csv].
// Throws UsageError for a wrong flag, std::runtime_error for a file that cannot be read.
HpoStudy read_hpo_study(const Arguments& arguments);

}  // namespace fleetscope::sharer
