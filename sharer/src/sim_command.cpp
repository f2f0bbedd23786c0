// `fleetscope sim`: replays a job trace (Tiresias format with Salus profiles) under a policy, or
// packs the Alibaba 2023 pod list onto its GPU nodes with three placement strategies.

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "arguments.h"
#include "csv.h"
#include "fleetscope/common/file_errors.h"
#include "fleetscope/sharer/commands.h"
#include "fleetscope/sharer/fleet_packing.h"
#include "fleetscope/sharer/hpo.h"
#include "fleetscope/sharer/mps.h"
#include "fleetscope/sharer/simulator.h"
#include "hpo_study.h"

namespace fleetscope::sharer {

namespace {

constexpr const char* kSimUsage =
    "usage: fleetscope sim --jobs FILE [--profiles FILE] --gpus N\n"
    "                      --policy fifo|srtf|pack|fair|fair-gputime|priority|salus-preempt\n"
    "                      [--lanes on|off]\n"
    "                      [--switch-cost-ms MS] [--gpu-memory-gib GIB] [--margin-sigma Z]\n"
    "                      [--interference-alpha A | --calibration RUNS.csv]\n"
    "                      [--context-mib MIB] [--starvation-bound-s S] [--backfill-window N]\n"
    "                      [--single-gpu-jobs] [--mps [--mps-clients N]] [--nodes FILE]\n"
    "                      [--host-link-gbps GB/S] [--step-times] [--format table|json]\n"
    "\n"
    "       fleetscope sim --hpo TRIALS --profiles FILE --model MODEL --gpus N\n"
    "                      [--trial-s S] [--utilization U | --trial-db DB] [--format table|json]\n"
    "\n"
    "--hpo compares three placements of one study's TRIALS trials (MODEL's smallest batch in\n"
    "the Salus profiles, each --trial-s seconds of work alone, default 60, at utilization U,\n"
    "default 1, or the utilization the analyzer measures in a capture of one trial, --trial-db):\n"
    "one trial per GPU, Salus PACK (lanes) and Fluid-style water-filling (spread, each GPU\n"
    "filled up to one GPU of utilization, refilled as trials finish).\n"
    "\n"
    "Job traces in Tiresias format "
    "(job_id,num_gpu,submit_time,iterations,model_name,duration,...)\n"
    "take iteration time and memory from Salus workload profiles (--profiles, default:\n"
    "salus_workloads.csv next to the trace). An Alibaba 2023 pod list (name,...,gpu_milli,...)\n"
    "is packed onto its node list (--nodes, default: the node list next to it, or --gpus GPUs in\n"
    "8-GPU nodes) with exclusive, first-fit and best-fit lane placement; --policy is not used.\n"
    "Defaults: --lanes off (one lane per GPU: Salus's SRTF/FAIR setting) except --policy pack\n"
    "and waterfill (lanes on), --switch-cost-ms 5, --gpu-memory-gib 16 (P100), --margin-sigma 3,\n"
    "interference: a local --calibration RUNS.csv (used only where its fit beats alpha = 0\n"
    "on held-out pairs) or --interference-alpha A; otherwise no model (alpha = 0: the published\n"
    "Gavel pairs are not fitted, their utilizations derive from their slowdowns); the output\n"
    "names the one used. fair is Salus's FAIR (least memory x time, reset when a job joins),\n"
    "fair-gputime least GPU time; salus-preempt is Salus's trace-run scheduler (at most 11 jobs\n"
    "per GPU, memory paged to host, the newest job runs); a job that runs with memory on the\n"
    "host pays the transfer at --host-link-gbps GB/s (default 15.75: PCIe 3.0 x16).\n"
    "--context-mib 300 (CUDA context per job process), --starvation-bound-s 1800 (a multi-GPU\n"
    "job waiting longer reserves GPUs), --backfill-window 500, --format table.\n"
    "--single-gpu-jobs runs every job on one GPU (the setting of Salus's experiments).\n"
    "--step-times reports each job's p99 step time in the run (completion to completion, waits\n"
    "included; every iteration is simulated one by one).\n"
    "--mps models NVIDIA MPS instead of lanes: every job a client process with its own context\n"
    "and a static memory slice, all running concurrently, at most --mps-clients per GPU\n"
    "(default 48, Volta and newer; 16 before Volta); needs a sharing policy.\n";

std::string first_line(const std::string& path) {
  // A FIFO or a directory is named, not read (a FIFO's read waited for a writer for ever).
  if (auto problem = common::input_problem(path, "a job trace (CSV)"))
    throw std::runtime_error(common::cannot_read(path, *problem));
  std::ifstream in(path);
  if (!in) csv::throw_cannot_open(path, "a job trace (CSV)");
  std::string line;
  std::getline(in, line);
  return line;
}

std::string sibling(const std::string& path, const std::string& name) {
  return (std::filesystem::path(path).parent_path() / name).string();
}

int run_alibaba(const Arguments& arguments, const std::string& jobs_path, const std::string& format,
                std::ostream& out, std::ostream& err) {
  const auto pods = load_alibaba_pods(jobs_path);
  std::vector<GpuNode> nodes;
  std::string nodes_path =
      arguments.get_or("--nodes", sibling(jobs_path, "alibaba2023_openb_node_list_gpu_node.csv"));
  if (arguments.has("--nodes") ||
      (!arguments.has("--gpus") && std::filesystem::exists(nodes_path))) {
    nodes = load_alibaba_nodes(nodes_path);
  } else if (arguments.has("--gpus")) {
    const double requested = arguments.number("--gpus", 0);
    if (requested < 1 || requested > kMaxGpus || requested != std::floor(requested)) {
      throw UsageError("--gpus expects a whole number in 1..100000");
    }
    const int gpus = static_cast<int>(requested);
    for (int made = 0; made < gpus; made += 8) {
      nodes.push_back(GpuNode{"node-" + std::to_string(made / 8), std::min(8, gpus - made), ""});
    }
  } else {
    err << "sim: " << jobs_path << " is an Alibaba pod list; give --nodes FILE or --gpus N\n";
    return 2;
  }
  // Three questions: the trace replayed in time on its own nodes; every pod at once on its own
  // nodes; every pod at once on as many 8-GPU nodes as it takes (GPUs needed).
  std::vector<PackingResult> results;
  for (PackingOptions scenario :
       {PackingOptions{false, 0}, PackingOptions{true, 0}, PackingOptions{true, 8}}) {
    for (auto strategy :
         {PackingStrategy::kExclusive, PackingStrategy::kFirstFit, PackingStrategy::kBestFit}) {
      results.push_back(simulate_packing(
          pods, scenario.grow_node_gpus > 0 ? std::vector<GpuNode>{} : nodes, strategy, scenario));
    }
  }
  if (format == "json") {
    nlohmann::json document{
        {"trace", jobs_path}, {"pods", pods.size()}, {"strategies", packing_to_json(results)}};
    out << document.dump(2) << "\n";
  } else {
    out << pods.size() << " GPU pods; node list: " << results.front().total_gpus << " GPUs\n";
    write_packing_table(results, out);
  }
  return 0;
}

int run_hpo(const Arguments& arguments, const std::string& format, std::ostream& out) {
  const HpoStudy study = read_hpo_study(arguments);
  const SimConfig& config = study.config;
  const double trials = study.trials;
  const double trial_s = study.trial_s;
  const double utilization = study.utilization;
  const std::string& utilization_source = study.utilization_source;
  const auto comparison = compare_hpo(study.jobs, config);
  const std::pair<const char*, const SimResult*> rows[] = {{"one-per-gpu", &comparison.one_per_gpu},
                                                           {"pack", &comparison.pack},
                                                           {"waterfill", &comparison.waterfill}};
  if (format == "json") {
    nlohmann::json document{{"trials", trials},
                            {"utilization_source", utilization_source},
                            {"model", study.model},
                            {"batch_size", study.batch_size},
                            {"trial_s", trial_s},
                            {"utilization", utilization},
                            {"gpus", config.gpus},
                            {"placements", nlohmann::json::array()},
                            {"interference", interference_to_json(study.interference)}};
    for (const auto& [name, result] : rows) {
      document["placements"].push_back({{"placement", name},
                                        {"makespan_s", result->makespan_s},
                                        {"avg_jct_s", result->avg_jct_s},
                                        {"gpu_utilization", result->gpu_utilization},
                                        {"gpus_used_peak", result->gpus_used_peak}});
    }
    out << document.dump(2) << "\n";
    return 0;
  }
  char line[300];
  std::snprintf(line, sizeof line,
                "%d trials of %s batch %d, %.0f s each alone, utilization %.3f, %d GPUs\n",
                static_cast<int>(trials), study.model.c_str(), study.batch_size, trial_s,
                utilization, config.gpus);
  out << line << "utilization: " << utilization_source << "\n";
  out << "interference: " << study.interference.description << "\n";
  std::snprintf(line, sizeof line, "%-12s %12s %12s %8s %6s\n", "PLACEMENT", "MAKESPAN_S",
                "AVG_JCT_S", "GPU_UTIL", "GPUS");
  out << line;
  for (const auto& [name, result] : rows) {
    std::snprintf(line, sizeof line, "%-12s %12.1f %12.1f %8.3f %6d\n", name, result->makespan_s,
                  result->avg_jct_s, result->gpu_utilization, result->gpus_used_peak);
    out << line;
  }
  return 0;
}

}  // namespace

int run_sim_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    const Arguments arguments(args,
                              {"--jobs",
                               "--profiles",
                               "--nodes",
                               "--gpus",
                               "--policy",
                               "--lanes",
                               "--switch-cost-ms",
                               "--host-link-gbps",
                               "--gpu-memory-gib",
                               "--margin-sigma",
                               "--interference-alpha",
                               "--calibration",
                               "--context-mib",
                               "--starvation-bound-s",
                               "--backfill-window",
                               "--format",
                               "--mps-clients",
                               "--hpo",
                               "--model",
                               "--trial-s",
                               "--utilization",
                               "--trial-db"},
                              {"--help", "--single-gpu-jobs", "--mps", "--step-times"});
    if (arguments.has("--help")) {
      out << kSimUsage;
      return 0;
    }
    if (!arguments.positional().empty()) {
      throw UsageError("unexpected argument " + arguments.positional().front());
    }
    const std::string format = arguments.get_or("--format", "table");
    if (format != "table" && format != "json") {
      throw UsageError("--format expects table|json, got '" + format + "'");
    }
    if (arguments.has("--hpo")) {
      try {
        return run_hpo(arguments, format, out);
      } catch (const UsageError&) {
        throw;
      } catch (const std::exception& error) {
        err << "sim: " << error.what() << "\n";
        return 1;
      }
    }
    const auto jobs_path = arguments.get("--jobs");
    if (!jobs_path) throw UsageError("--jobs FILE is required");
    const std::string policy_text = arguments.get_or("--policy", "");
    const bool mps = arguments.has("--mps");
    const std::string lanes = arguments.get_or(
        "--lanes", policy_text == "pack" || policy_text == "waterfill" || mps ? "on" : "off");
    if (lanes != "on" && lanes != "off") {
      throw UsageError("--lanes expects on|off, got '" + lanes + "'");
    }
    try {
      if (first_line(*jobs_path).find("gpu_milli") != std::string::npos) {
        return run_alibaba(arguments, *jobs_path, format, out, err);
      }
      const auto policy_name = arguments.get("--policy");
      if (!policy_name)
        throw UsageError(
            "--policy fifo|srtf|pack|fair|fair-gputime|priority|salus-preempt is required");
      if (!arguments.has("--gpus")) throw UsageError("--gpus N is required");
      std::unique_ptr<Policy> policy;
      try {
        policy = make_policy(*policy_name);
      } catch (const std::invalid_argument& error) {
        throw UsageError(error.what());
      }
      SimConfig config;
      const double gpus = arguments.number("--gpus", 1);
      if (gpus < 1 || gpus > kMaxGpus || gpus != std::floor(gpus)) {
        throw UsageError("--gpus expects a whole number in 1..100000");
      }
      config.gpus = static_cast<int>(gpus);
      config.lanes = lanes == "on";
      if (arguments.has("--mps-clients") && !mps) throw UsageError("--mps-clients needs --mps");
      if (mps) {
        if (policy->exclusive()) {
          throw UsageError("--mps needs a sharing policy (srtf, pack, fair or priority)");
        }
        if (!config.lanes) throw UsageError("--mps runs clients in parallel: not with --lanes off");
        const double clients = arguments.number("--mps-clients", kMpsClientsVolta);
        if (!(clients >= 1 && clients <= 4096 && clients == std::floor(clients))) {
          throw UsageError("--mps-clients expects a whole number in 1..4096");
        }
        config.mps_clients = static_cast<int>(clients);
      }
      config.switch_cost_s = arguments.number("--switch-cost-ms", 5) / 1000.0;
      const double link_gbps = arguments.number("--host-link-gbps", 15.75);
      if (!(link_gbps > 0)) throw UsageError("--host-link-gbps expects a number > 0");
      config.host_link_bytes_per_s = link_gbps * 1e9;
      const double gib = arguments.number("--gpu-memory-gib", 16);
      if (!(gib > 0 && gib <= 1e6)) throw UsageError("--gpu-memory-gib expects (0, 1e6]");
      config.gpu_capacity_bytes = static_cast<int64_t>(gib * static_cast<double>(kGiB));
      const double context_mib = arguments.number("--context-mib", 300);
      if (!(context_mib >= 0 && context_mib <= 1e6)) {
        throw UsageError("--context-mib expects [0, 1e6]");
      }
      config.memory.context_bytes = static_cast<int64_t>(context_mib * static_cast<double>(kMiB));
      config.memory.margin.z = arguments.number("--margin-sigma", config.memory.margin.z);
      // Interference: the published default, a local calibration or a value on the command line.
      InterferenceCalibration interference = published_interference();
      if (arguments.has("--interference-alpha")) {
        interference = interference_from_flag(arguments.number("--interference-alpha", 0));
      }
      config.interference = interference.model;
      config.starvation_bound_s =
          arguments.number("--starvation-bound-s", config.starvation_bound_s);
      const double window = arguments.number("--backfill-window", config.backfill_window);
      if (!(window >= 1 && window <= 1e9)) throw UsageError("--backfill-window expects 1..1e9");
      config.backfill_window = static_cast<int>(window);
      try {
        validate_config(config);
      } catch (const std::invalid_argument& error) {
        throw UsageError(error.what());
      }
      if (auto runs_path = arguments.get("--calibration")) {
        if (arguments.has("--interference-alpha")) {
          throw UsageError("give --interference-alpha or --calibration, not both");
        }
        interference = interference_from_file(*runs_path);
        config.interference = interference.model;
      }
      const std::string profiles_path =
          arguments.get_or("--profiles", sibling(*jobs_path, "salus_workloads.csv"));
      const auto profiles = load_salus_profiles(profiles_path);
      // A job wider than the cluster is named at its row here, not by the simulator without one.
      const bool single_gpu_jobs = arguments.has("--single-gpu-jobs");
      auto jobs =
          load_tiresias_jobs(*jobs_path, profiles, single_gpu_jobs ? kMaxGpus : config.gpus);
      // Salus's own experiments run every job on one GPU; this reproduces that setting.
      if (single_gpu_jobs) {
        for (auto& job : jobs) job.num_gpu = 1;
      }
      // Every iteration is then simulated one by one (no closed form).
      config.record_step_times = arguments.has("--step-times");
      const auto result = simulate(jobs, *policy, config);
      if (format == "json") {
        auto document = sim_result_to_json(result);
        document["interference"] = interference_to_json(interference);
        out << document.dump(2) << "\n";
      } else {
        out << "interference: " << interference.description << "\n";
        write_sim_table(result, out);
      }
      return 0;
    } catch (const UsageError&) {
      throw;
    } catch (const std::exception& error) {
      err << "sim: " << error.what() << "\n";
      return 1;
    }
  } catch (const UsageError& error) {
    err << "sim: " << error.what() << "\n" << kSimUsage;
    return 2;
  }
}

}  // namespace fleetscope::sharer
