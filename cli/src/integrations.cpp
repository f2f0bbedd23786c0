// Connections between parts that must not depend on each other directly: the sharer's planner
// reads jobs through a loader hook, and the analyzer's analysis session provides them.
#include "fleetscope/cli/integrations.h"

#include "fleetscope/analyzer/session.h"
#include "fleetscope/sharer/commands.h"

namespace fleetscope::cli {

sharer::CandidateSet candidates_from_databases(const std::vector<std::string>& paths,
                                               const sharer::MemoryModel& memory) {
  analyzer::AnalysisSession session;
  for (const auto& path : paths) session.open(path);
  analyzer::PlanInputs inputs = session.plan_inputs(memory);
  return {std::move(inputs.jobs), std::move(inputs.skipped)};
}

// Every GPU job of the database with the utilization and iteration time the analyzer measures,
// memory measured or not (sim --hpo takes the trial's memory from its model's profile).
std::vector<sharer::TrialMeasurement> trials_from_database(const std::string& db_path) {
  analyzer::AnalysisSession session;
  session.open(db_path);
  std::vector<sharer::TrialMeasurement> trials;
  for (const analyzer::ConsolidationCandidate& c : session.candidates()) {
    sharer::TrialMeasurement trial;
    trial.job = analyzer::job_name(c) + "/gpu" + std::to_string(c.device);
    trial.utilization = c.utilization;
    trial.iteration_s = static_cast<double>(c.iteration_ns) * 1e-9;
    trials.push_back(std::move(trial));
  }
  return trials;
}

void wire_integrations() {
  static const bool wired = [] {
    sharer::set_candidate_loader(candidates_from_databases);
    sharer::set_trial_loader(trials_from_database);
    sharer::set_work_loader(captured_work_from_database);
    return true;
  }();
  (void)wired;
}

}  // namespace fleetscope::cli
