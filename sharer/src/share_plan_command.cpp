// `fleetscope share plan`: turns the analyzer's consolidation candidates into a plan.

#include <nlohmann/json.hpp>

#include "arguments.h"
#include "fleetscope/sharer/commands.h"
#include "fleetscope/sharer/planner.h"

namespace fleetscope::sharer {

namespace {

CandidateLoader& candidate_loader() {
  static CandidateLoader loader;
  return loader;
}

constexpr const char* kPlanUsage =
    "usage: fleetscope share plan [DB...] [--candidates FILE.json] [--max-slowdown X]\n"
    "                             [--interference-alpha A | --calibration RUNS.csv]\n"
    "                             [--margin-sigma Z] [--replay] [--format table|json] [--wide]\n"
    "\n"
    "Plans which jobs share which GPU and lane so that GPUs are freed, never violating\n"
    "sum(P) + max(T) + margin <= lane capacity, never putting a latency/priority job behind a "
    "batch\n"
    "job, and keeping each job's predicted slowdown within --max-slowdown (default 1.2; a job's\n"
    "max_slowdown label overrides it). Interference: --calibration RUNS.csv (used only\n"
    "where its fit beats alpha = 0 on held-out pairs) or --interference-alpha A; otherwise\n"
    "\"no model: bounded by measured slowdown only\" (alpha = 0); the output names the one used. "
    "Candidates come from analyzer databases (DB...) or from a\n"
    "JSON array of job profiles (--candidates). --replay runs the plan in the simulator and\n"
    "prints each job's predicted and simulated slowdown. --wide prints names in full (the table\n"
    "otherwise cuts long ones in the middle, keeping both ends).\n";

}  // namespace

void set_candidate_loader(CandidateLoader loader) {
  candidate_loader() = std::move(loader);
}

int run_share_plan_command(const std::vector<std::string>& args, std::ostream& out,
                           std::ostream& err) {
  try {
    const Arguments arguments(args,
                              {"--candidates", "--max-slowdown", "--interference-alpha",
                               "--margin-sigma", "--format", "--calibration"},
                              {"--help", "--replay", "--wide"});
    if (arguments.has("--help")) {
      out << kPlanUsage;
      return 0;
    }
    const std::string format = arguments.get_or("--format", "table");
    if (format != "table" && format != "json") {
      throw UsageError("--format expects table|json, got '" + format + "'");
    }
    if (arguments.positional().empty() && !arguments.has("--candidates")) {
      throw UsageError("give at least one DB or --candidates FILE.json");
    }
    PlannerOptions options;
    options.max_slowdown = arguments.number("--max-slowdown", options.max_slowdown);
    if (!(options.max_slowdown >= 1.0 && options.max_slowdown <= 1e6)) {
      throw UsageError("--max-slowdown must be in [1, 1e6]");
    }
    // Interference: the published default, a local calibration or a value on the command line.
    InterferenceCalibration interference = published_interference();
    if (arguments.has("--interference-alpha")) {
      const double alpha = arguments.number("--interference-alpha", 0);
      if (!(alpha >= 0 && alpha <= 100)) {
        throw UsageError("--interference-alpha must be in [0, 100]");
      }
      if (arguments.has("--calibration")) {
        throw UsageError("give --interference-alpha or --calibration, not both");
      }
      interference = interference_from_flag(alpha);
    }
    options.margin.z = arguments.number("--margin-sigma", options.margin.z);
    if (!(options.margin.z >= 0 && options.margin.z <= 100)) {
      throw UsageError("--margin-sigma must be in [0, 100]");
    }
    try {
      std::vector<JobProfile> jobs;
      if (auto path = arguments.get("--candidates")) jobs = load_job_profiles(*path);
      for (const auto& db : arguments.positional()) {
        if (!candidate_loader()) {
          err << "share plan: cannot read " << db
              << ": no analyzer database reader is linked in; use --candidates FILE.json\n";
          return 1;
        }
        auto more = candidate_loader()(db);
        jobs.insert(jobs.end(), more.begin(), more.end());
      }
      if (auto runs_path = arguments.get("--calibration")) {
        interference = interference_from_file(*runs_path);
      }
      options.interference = interference.model;
      const auto plan = plan_consolidation(jobs, options);
      std::vector<ReplayedJob> replay;
      if (arguments.has("--replay")) replay = replay_plan(jobs, plan, options);
      if (format == "json") {
        auto document = plan_to_json(plan);
        document["interference"] = interference_to_json(interference);
        if (arguments.has("--replay")) {
          document["replay"] = nlohmann::json::array();
          for (const auto& row : replay) {
            document["replay"].push_back({{"job_id", row.job_id},
                                          {"predicted_slowdown", row.predicted_slowdown},
                                          {"simulated_slowdown", row.simulated_slowdown}});
          }
        }
        out << document.dump(2) << "\n";
      } else {
        out << "interference: " << interference.description << "\n";
        write_plan_table(plan, out, arguments.has("--wide"));
        if (arguments.has("--replay")) {
          out << "replay (simulator, round robin in lanes):\n";
          for (const auto& row : replay) {
            out << "  " << row.job_id << ": predicted " << row.predicted_slowdown << ", simulated "
                << row.simulated_slowdown << "\n";
          }
        }
      }
      return 0;
    } catch (const std::exception& error) {
      err << "share plan: " << error.what() << "\n";
      return 1;
    }
  } catch (const UsageError& error) {
    err << "share plan: " << error.what() << "\n" << kPlanUsage;
    return 2;
  }
}

}  // namespace fleetscope::sharer
