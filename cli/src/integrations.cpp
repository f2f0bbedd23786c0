// Connections between parts that must not depend on each other directly: the sharer's planner
// reads jobs through a loader hook, and the analyzer provides the jobs.
#include "fleetscope/cli/integrations.h"

#include "fleetscope/analyzer/consolidation.h"
#include "fleetscope/sharer/commands.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::cli {

std::vector<sharer::JobProfile> job_profiles_from_database(const std::string& db_path) {
  store::Reader reader(db_path);
  std::vector<sharer::JobProfile> jobs;
  for (const analyzer::ConsolidationCandidate& c : analyzer::consolidation_candidates(reader)) {
    // Without measured memory P = T = 0 would pass any safety check: such jobs cannot be placed.
    if (!c.memory_measured || c.gpu_memory_bytes <= 0) continue;
    sharer::JobProfile job;
    std::string where = db_path + "#capture" + std::to_string(c.capture_id);
    job.job_id = (c.workflow.empty() ? "capture" + std::to_string(c.capture_id) : c.workflow) +
                 "@" + where + "/gpu" + std::to_string(c.device);
    job.workflow = c.workflow;
    job.gpu = where + "/gpu" + std::to_string(c.device) + " (" + c.gpu_name + ")";
    job.persistent_bytes = c.persistent_bytes;
    job.ephemeral_peak_bytes = c.ephemeral_peak_bytes;
    job.gpu_capacity_bytes = c.gpu_memory_bytes;
    job.utilization = c.utilization;
    job.iteration_ns = c.iteration_ns;
    // The analyzer's measured per-iteration variation of T (-1 when not measured: the sharer then
    // uses its prior). Without this the planner always fell back to the 2 % prior.
    job.peak_stddev_bytes = c.ephemeral_peak_stddev_bytes;
    job.labels = c.labels;
    jobs.push_back(std::move(job));
  }
  return jobs;
}

// Every GPU job of the database with the utilization and iteration time the analyzer measures,
// memory measured or not (sim --hpo takes the trial's memory from its model's profile).
std::vector<sharer::TrialMeasurement> trials_from_database(const std::string& db_path) {
  store::Reader reader(db_path);
  std::vector<sharer::TrialMeasurement> trials;
  for (const analyzer::ConsolidationCandidate& c : analyzer::consolidation_candidates(reader)) {
    sharer::TrialMeasurement trial;
    trial.job = (c.workflow.empty() ? "capture" + std::to_string(c.capture_id) : c.workflow) +
                "/gpu" + std::to_string(c.device);
    trial.utilization = c.utilization;
    trial.iteration_s = static_cast<double>(c.iteration_ns) * 1e-9;
    trials.push_back(std::move(trial));
  }
  return trials;
}

void wire_integrations() {
  static const bool wired = [] {
    sharer::set_candidate_loader(job_profiles_from_database);
    sharer::set_trial_loader(trials_from_database);
    sharer::set_work_loader(captured_work_from_database);
    return true;
  }();
  (void)wired;
}

}  // namespace fleetscope::cli
