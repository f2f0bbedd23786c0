#pragma once
// Entry points of `fleetscope sim` and `fleetscope share plan` for the CLI. `args` are the
// arguments after the subcommand. Results go to `out`, diagnostics to `err`. Exit codes:
// 0 ok, 1 failure (bad input, unreadable file), 2 usage error.

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <cstdint>
#include <optional>

#include "fleetscope/sharer/gpu_advice.h"
#include "fleetscope/sharer/job_profile.h"
#include "fleetscope/sharer/memory_model.h"

namespace fleetscope::sharer {

int run_sim_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_share_plan_command(const std::vector<std::string>& args, std::ostream& out,
                           std::ostream& err);
// `fleetscope share calibrate --runs RUNS.csv`: fits the interference model's alpha to
// co-location measurements and reports the prediction error before and after.
int run_share_calibrate_command(const std::vector<std::string>& args, std::ostream& out,
                                std::ostream& err);

// The jobs the planner can place from analyzer databases, and the candidates it cannot (each
// "job: why", e.g. P and T unknown).
struct CandidateSet {
  std::vector<JobProfile> jobs;
  std::vector<std::string> skipped;
};
// Reads the consolidation candidates of analyzer databases (the analysis session, analyzer/
// session.h) under the memory model the plan uses. The CLI wires the analyzer in; until then
// `share plan DB` fails with a clear message (use --candidates FILE.json).
using CandidateLoader =
    std::function<CandidateSet(const std::vector<std::string>& db_paths, const MemoryModel&)>;
void set_candidate_loader(CandidateLoader loader);

// What `sim --hpo --trial-db DB` takes from a capture of one trial: the GPU utilization and the
// iteration time the analyzer measures (its consolidation candidates; memory is not needed, the
// model's Salus profile gives P and T). The CLI wires the analyzer in.
struct TrialMeasurement {
  std::string job;
  double utilization = 0;
  double iteration_s = 0;  // 0: not measured
};
using TrialLoader = std::function<std::vector<TrialMeasurement>(const std::string& db_path)>;
void set_trial_loader(TrialLoader loader);

// `fleetscope advise DB`: GPU-type advice from a capture's per-kernel times (gpu_advice.h).
int run_advise_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
// Reads one capture's GPU activities, GPU names and steps (capture: the newest when absent). The
// CLI wires the analyzer's loader in.
using WorkLoader =
    std::function<CapturedWork(const std::string& db_path, std::optional<int64_t> capture)>;
void set_work_loader(WorkLoader loader);

}  // namespace fleetscope::sharer
