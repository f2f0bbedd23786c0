// `fleetscope share plan`: turns the analyzer's consolidation candidates into a plan.

#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "arguments.h"
#include "fleetscope/sharer/commands.h"
#include "fleetscope/sharer/host_planning.h"
#include "fleetscope/sharer/hpo.h"
#include "fleetscope/sharer/planner.h"
#include "hpo_study.h"

namespace fleetscope::sharer {

namespace {

CandidateLoader& candidate_loader() {
  static CandidateLoader loader;
  return loader;
}

constexpr const char* kPlanUsage =
    "usage: fleetscope share plan [DB...] [--candidates FILE.json] [--max-slowdown X]\n"
    "                             [--interference-alpha A | --calibration RUNS.csv]\n"
    "                             [--margin-sigma Z] [--single-lane] [--config FILE]\n"
    "                             [--policy fifo|srtf|priority]\n"
    "                             [--replay] [--format table|json] [--wide]\n"
    "\n"
    "Plans which jobs share which GPU and lane so that GPUs are freed, never violating\n"
    "sum(P) + max(T) + margin <= lane capacity, never putting a latency/priority job behind a "
    "batch\n"
    "job, and keeping each job's predicted slowdown within --max-slowdown (default 1.2; a job's\n"
    "max_slowdown label overrides it). Interference: --calibration RUNS.csv (used only\n"
    "where its fit beats alpha = 0 on held-out pairs) or --interference-alpha A; otherwise\n"
    "\"no model: bounded by measured slowdown only\" (alpha = 0); the output names the one used.\n"
    "Every job also holds its CUDA context on the GPU, outside its lane:\n"
    "cuda_context_mib in the host config (--config FILE, else $FLEETSCOPE_CONFIG, else\n"
    "/etc/fleetscope/fleetscoped.conf; scripts/gpu-check measures it), else 300 MiB.\n"
    "--single-lane plans Salus's own mode: one lane per GPU that all its jobs time-slice (for\n"
    "jobs that accept time slicing). --policy is the turn policy the lanes will run (what\n"
    "`share apply` hands their arbiter; default fifo, round robin): it decides who waits in a\n"
    "shared lane, so it changes the predicted slowdowns and the plan. srtf orders jobs by their\n"
    "steps label x iteration time (none: last), priority by their integer priority label\n"
    "(higher first). The JSON of a plan for srtf or priority says so (turn_policy).\n"
    "Candidates come from analyzer databases (DB...: P and T\n"
    "from memory events in the window, else the daemon's NVML figures, else the job is not\n"
    "planned; each job says which) or from a JSON array of job profiles (--candidates).\n"
    "--replay runs the plan in the simulator and prints each job's predicted and simulated\n"
    "slowdown, and its simulated p99 step time beside the plan's p99 bound (each job's\n"
    "iterations take its p99 alone 2 times in 100). --wide prints names in full (the table\n"
    "otherwise cuts long ones in the middle,\n"
    "keeping both ends).\n"
    "\n"
    "       fleetscope share plan --hpo TRIALS --profiles FILE --model MODEL --gpus N\n"
    "                             [--trial-s S] [--utilization U | --trial-db DB]\n"
    "                             [--interference-alpha A | --calibration RUNS.csv]\n"
    "                             [--format table|json]\n"
    "\n"
    "--hpo plans one hyper-parameter tuning study Fluid-style (water-filling): the first wave\n"
    "fills every GPU with trials in lanes of their own up to one GPU of utilization, the\n"
    "lowest-filled GPU first, and every later trial takes the share a finished one freed. It\n"
    "prints where and when each trial runs (the simulator's water-filling run of the study,\n"
    "the same run as `sim --hpo`'s waterfill row) and the makespan of one trial per GPU and of\n"
    "Salus PACK on the same trials.\n";

// `share plan --hpo`: the water-filling plan of one study, beside the other two placements.
int run_hpo_plan(const Arguments& arguments, const std::string& format, std::ostream& out) {
  const HpoStudy study = read_hpo_study(arguments);
  const HpoPlan plan = plan_hpo(study.jobs, study.config);
  const HpoComparison comparison = compare_hpo(study.jobs, study.config);
  const std::pair<const char*, const SimResult*> placements[] = {
      {"one-per-gpu", &comparison.one_per_gpu},
      {"pack", &comparison.pack},
      {"waterfill", &plan.waterfill}};
  if (format == "json") {
    nlohmann::json document{{"hpo",
                             {{"trials", study.trials},
                              {"model", study.model},
                              {"batch_size", study.batch_size},
                              {"trial_s", study.trial_s},
                              {"utilization", study.utilization},
                              {"utilization_source", study.utilization_source},
                              {"gpus", study.config.gpus}}},
                            {"interference", interference_to_json(study.interference)},
                            {"first_wave", plan.first_wave},
                            {"max_trials_per_gpu", plan.max_trials_per_gpu},
                            {"makespan_s", plan.waterfill.makespan_s},
                            {"gpu_utilization", plan.waterfill.gpu_utilization},
                            {"placements", nlohmann::json::array()},
                            {"trials", nlohmann::json::array()}};
    for (const auto& [name, result] : placements) {
      document["placements"].push_back({{"placement", name},
                                        {"makespan_s", result->makespan_s},
                                        {"avg_jct_s", result->avg_jct_s},
                                        {"gpu_utilization", result->gpu_utilization}});
    }
    for (const auto& trial : plan.trials) {
      document["trials"].push_back({{"trial", trial.name},
                                    {"gpu", trial.gpu},
                                    {"lane", trial.lane},
                                    {"start_s", trial.start_s},
                                    {"finish_s", trial.finish_s},
                                    {"first_wave", trial.first_wave}});
    }
    out << document.dump(2) << "\n";
    return 0;
  }
  char line[300];
  out << "interference: " << study.interference.description << "\n";
  std::snprintf(line, sizeof line,
                "study: %d trials of %s batch %d, %.0f s each alone, utilization %.3f (%s), "
                "%d GPUs\n",
                study.trials, study.model.c_str(), study.batch_size, study.trial_s,
                study.utilization, study.utilization_source.c_str(), study.config.gpus);
  out << line;
  std::snprintf(line, sizeof line,
                "water-filling: %d trials start at once (at most %d per GPU, a lane each); the "
                "other %d start as trials finish\n",
                plan.first_wave, plan.max_trials_per_gpu,
                static_cast<int>(plan.trials.size()) - plan.first_wave);
  out << line;
  for (const auto& [name, result] : placements) {
    std::snprintf(line, sizeof line, "  %-12s makespan %10.1f s, GPU utilization %.3f\n", name,
                  result->makespan_s, result->gpu_utilization);
    out << line;
  }
  std::snprintf(line, sizeof line, "%-14s %5s %5s %10s %10s\n", "TRIAL", "GPU", "LANE", "START_S",
                "FINISH_S");
  out << line;
  for (const auto& trial : plan.trials) {
    std::snprintf(line, sizeof line, "%-14s %5d %5d %10.1f %10.1f\n", trial.name.c_str(), trial.gpu,
                  trial.lane, trial.start_s, trial.finish_s);
    out << line;
  }
  return 0;
}

}  // namespace

void set_candidate_loader(CandidateLoader loader) {
  candidate_loader() = std::move(loader);
}

int run_share_plan_command(const std::vector<std::string>& args, std::ostream& out,
                           std::ostream& err) {
  try {
    std::set<std::string> valued{"--candidates",   "--max-slowdown", "--interference-alpha",
                                 "--margin-sigma", "--format",       "--calibration",
                                 "--config",       "--policy"};
    valued.insert(kHpoStudyFlags.begin(), kHpoStudyFlags.end());
    const Arguments arguments(args, valued, {"--help", "--replay", "--single-lane", "--wide"});
    if (arguments.has("--help")) {
      out << kPlanUsage;
      return 0;
    }
    const std::string format = arguments.get_or("--format", "table");
    if (format != "table" && format != "json") {
      throw UsageError("--format expects table|json, got '" + format + "'");
    }
    if (arguments.has("--hpo")) {
      for (const char* flag : {"--candidates", "--max-slowdown", "--margin-sigma", "--config",
                               "--replay", "--single-lane", "--wide", "--policy"}) {
        if (arguments.has(flag)) throw UsageError(std::string(flag) + " does not apply to --hpo");
      }
      if (!arguments.positional().empty()) {
        throw UsageError("--hpo plans a study, not databases: unexpected " +
                         arguments.positional().front());
      }
      try {
        return run_hpo_plan(arguments, format, out);
      } catch (const UsageError&) {
        throw;
      } catch (const std::exception& error) {
        err << "share plan: " << error.what() << "\n";
        return 1;
      }
    }
    for (const char* flag :
         {"--profiles", "--model", "--gpus", "--trial-s", "--utilization", "--trial-db"}) {
      if (arguments.has(flag)) throw UsageError(std::string(flag) + " needs --hpo");
    }
    if (arguments.positional().empty() && !arguments.has("--candidates")) {
      throw UsageError("give at least one DB or --candidates FILE.json");
    }
    HostPlanning host;
    try {
      host = host_planning(arguments.get_or("--config", ""));
    } catch (const std::exception& error) {
      err << "share plan: " << error.what() << "\n";
      return 1;
    }
    PlannerOptions options = host.options;
    options.single_lane = arguments.has("--single-lane");
    const std::string policy = arguments.get_or("--policy", "fifo");
    const auto turn_order = turn_order_named(policy);
    if (!turn_order) {
      throw UsageError("--policy expects fifo|srtf|priority, got '" + policy + "'");
    }
    options.turn_order = *turn_order;
    options.max_slowdown = arguments.number("--max-slowdown", options.max_slowdown);
    if (!(options.max_slowdown >= 1.0 && options.max_slowdown <= 1e6)) {
      throw UsageError("--max-slowdown must be in [1, 1e6]");
    }
    // Interference: the published default, a local calibration or a value on the command line.
    InterferenceCalibration interference = host.interference;
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
    options.memory.margin.z = arguments.number("--margin-sigma", options.memory.margin.z);
    if (!(options.memory.margin.z >= 0 && options.memory.margin.z <= 100)) {
      throw UsageError("--margin-sigma must be in [0, 100]");
    }
    try {
      std::vector<JobProfile> jobs;
      std::vector<std::string> skipped;
      if (auto path = arguments.get("--candidates")) jobs = load_job_profiles(*path);
      if (!arguments.positional().empty()) {
        if (!candidate_loader()) {
          err << "share plan: cannot read " << arguments.positional().front()
              << ": no analyzer database reader is linked in; use --candidates FILE.json\n";
          return 1;
        }
        auto more = candidate_loader()(arguments.positional(), options.memory);
        jobs.insert(jobs.end(), more.jobs.begin(), more.jobs.end());
        skipped = std::move(more.skipped);
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
        document["context_source"] = host.context_source;
        document["not_planned"] = skipped;
        if (arguments.has("--replay")) {
          document["replay"] = nlohmann::json::array();
          for (const auto& row : replay) {
            document["replay"].push_back({{"job_id", row.job_id},
                                          {"predicted_slowdown", row.predicted_slowdown},
                                          {"simulated_slowdown", row.simulated_slowdown},
                                          {"predicted_p99_s", row.predicted_p99_s},
                                          {"simulated_p99_s", row.simulated_p99_s}});
          }
        }
        out << document.dump(2) << "\n";
      } else {
        out << "interference: " << interference.description << "\n";
        out << "CUDA context per job: " << options.memory.context_bytes / kMiB << " MiB ("
            << host.context_source << ")\n";
        write_plan_table(plan, out, arguments.has("--wide"));
        for (const auto& why : skipped) out << "not planned: " << why << "\n";
        if (arguments.has("--replay")) {
          out << "replay (simulator, "
              << (plan.turn_order == TurnOrder::kFifo ? std::string("round robin")
                                                      : turn_order_name(plan.turn_order) + " turns")
              << " in lanes):\n";
          for (const auto& row : replay) {
            out << "  " << row.job_id << ": predicted " << row.predicted_slowdown << ", simulated "
                << row.simulated_slowdown;
            if (row.predicted_p99_s > 0) {
              out << "; p99 step " << row.simulated_p99_s * 1e3 << " ms simulated, bound "
                  << row.predicted_p99_s * 1e3 << " ms predicted";
            }
            out << "\n";
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
