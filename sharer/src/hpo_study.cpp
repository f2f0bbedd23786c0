#include "hpo_study.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "fleetscope/sharer/commands.h"
#include "fleetscope/sharer/hpo.h"

namespace fleetscope::sharer {

namespace {
TrialLoader& trial_loader() {
  static TrialLoader loader;
  return loader;
}
}  // namespace

void set_trial_loader(TrialLoader loader) {
  trial_loader() = std::move(loader);
}

const std::set<std::string> kHpoStudyFlags{"--hpo",      "--profiles",    "--model",
                                           "--gpus",     "--trial-s",     "--utilization",
                                           "--trial-db", "--calibration", "--interference-alpha"};

HpoStudy read_hpo_study(const Arguments& arguments) {
  HpoStudy study;
  const double trials = arguments.number("--hpo", 0);
  if (!(trials >= 1 && trials <= 1e6 && trials == std::floor(trials))) {
    throw UsageError("--hpo expects a whole number of trials in 1..1000000");
  }
  study.trials = static_cast<int>(trials);
  const auto profiles_path = arguments.get("--profiles");
  const auto model = arguments.get("--model");
  if (!profiles_path || !model) throw UsageError("--hpo needs --profiles FILE and --model MODEL");
  if (!arguments.has("--gpus")) throw UsageError("--gpus N is required");
  const double gpus = arguments.number("--gpus", 1);
  if (gpus < 1 || gpus > kMaxGpus || gpus != std::floor(gpus)) {
    throw UsageError("--gpus expects a whole number in 1..100000");
  }
  study.trial_s = arguments.number("--trial-s", 60);
  if (!(study.trial_s > 0 && study.trial_s <= 1e7)) throw UsageError("--trial-s expects (0, 1e7]");
  study.utilization = arguments.number("--utilization", 1);
  if (!(study.utilization > 0 && study.utilization <= 1)) {
    throw UsageError("--utilization expects (0, 1]");
  }
  study.utilization_source = arguments.has("--utilization") ? "--utilization" : "default";
  study.interference = published_interference();
  if (arguments.has("--interference-alpha")) {
    if (arguments.has("--calibration")) {
      throw UsageError("give --interference-alpha or --calibration, not both");
    }
    const double alpha = arguments.number("--interference-alpha", 0);
    if (!(alpha >= 0 && alpha <= 100)) throw UsageError("--interference-alpha must be in [0, 100]");
    study.interference = interference_from_flag(alpha);
  }
  if (const auto trial_db = arguments.get("--trial-db")) {
    if (arguments.has("--utilization")) {
      throw UsageError("give --utilization or --trial-db, not both");
    }
    if (!trial_loader()) {
      throw std::runtime_error("--trial-db needs the analyzer (the CLI wires it)");
    }
    const auto measured = trial_loader()(*trial_db);
    if (measured.empty() || !(measured.front().utilization > 0)) {
      throw std::runtime_error(*trial_db + ": no GPU job with a measured utilization");
    }
    study.utilization = std::min(1.0, measured.front().utilization);
    study.utilization_source =
        "measured by the analyzer in " + *trial_db + " (" + measured.front().job + ")";
  }
  if (const auto runs_path = arguments.get("--calibration")) {
    study.interference = interference_from_file(*runs_path);
  }
  const auto profiles = load_salus_profiles(*profiles_path);
  const WorkloadProfile* smallest = nullptr;
  for (const auto& profile : profiles.profiles) {
    if (profile.model == *model && (!smallest || profile.batch_size < smallest->batch_size)) {
      smallest = &profile;
    }
  }
  if (!smallest) throw UsageError("--model " + *model + " is not in " + *profiles_path);
  study.model = smallest->model;
  study.batch_size = smallest->batch_size;
  study.config.gpus = static_cast<int>(gpus);
  study.config.interference = study.interference.model;
  study.jobs = hpo_trials(*smallest, study.trials, study.trial_s, study.utilization);
  return study;
}

}  // namespace fleetscope::sharer
