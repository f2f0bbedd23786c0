// The two command entry points: exit codes, flags, output formats and error messages.

#include "fleetscope/sharer/commands.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "test_paths.h"

namespace fleetscope::sharer {
namespace {

using testing::jobs_data;
using testing::scratch_file;

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome sim(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = run_sim_command(args, out, err);
  return {code, out.str(), err.str()};
}

Outcome plan(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = run_share_plan_command(args, out, err);
  return {code, out.str(), err.str()};
}

const std::string kCandidates = R"([
  {"job_id": "a", "workflow": "w", "gpu": "gpu0", "persistent_bytes": 2147483648,
   "ephemeral_peak_bytes": 2147483648, "gpu_capacity_bytes": 17179869184,
   "utilization": 0.3, "iteration_ns": 100000000},
  {"job_id": "b", "workflow": "w", "gpu": "gpu1", "persistent_bytes": 2147483648,
   "ephemeral_peak_bytes": 2147483648, "gpu_capacity_bytes": 17179869184,
   "utilization": 0.3, "iteration_ns": 100000000, "labels": {"class": "batch"}}
])";

TEST(SimCommand, HelpIsNotAnError) {
  const auto result = sim({"--help"});
  EXPECT_EQ(result.code, 0);
  EXPECT_NE(result.out.find("usage: fleetscope sim"), std::string::npos);
}

TEST(SimCommand, TiresiasJsonHasTheSummaryAndPerJobRows) {
  const auto result = sim({"--jobs", jobs_data("tiresias_60_job.csv"), "--gpus", "8", "--policy",
                           "srtf", "--format", "json"});
  ASSERT_EQ(result.code, 0) << result.err;
  const auto json = nlohmann::json::parse(result.out);
  for (const char* key : {"avg_jct_s", "makespan_s", "gpu_utilization", "gpus_used_peak"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  EXPECT_EQ(json.at("jobs").size(), 60u);
  EXPECT_EQ(json.at("policy"), "srtf");
}

TEST(SimCommand, TableOutputAndLanesOff) {
  const auto result = sim({"--jobs", jobs_data("tiresias_60_job.csv"), "--profiles",
                           jobs_data("salus_workloads.csv"), "--gpus=8", "--policy=fair", "--lanes",
                           "off", "--switch-cost-ms", "10"});
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_NE(result.out.find("policy fair, lanes off, 8 GPUs"), std::string::npos) << result.out;
}

// --step-times: each job's p99 step time in the run (waits included), at least its iteration
// alone; the same run's finishes as without it (the stepped run is the closed form's reference).
TEST(SimCommand, StepTimesReportEachJobsP99Step) {
  const std::vector<std::string> args{"--jobs",
                                      jobs_data("tiresias_60_job.csv"),
                                      "--gpus",
                                      "1",
                                      "--single-gpu-jobs",
                                      "--policy",
                                      "srtf",
                                      "--format",
                                      "json"};
  auto with_steps = args;
  with_steps.push_back("--step-times");
  const auto plain = sim(args);
  const auto stepped = sim(with_steps);
  ASSERT_EQ(stepped.code, 0) << stepped.err;
  const auto a = nlohmann::json::parse(plain.out);
  const auto b = nlohmann::json::parse(stepped.out);
  ASSERT_EQ(a.at("jobs").size(), b.at("jobs").size());
  for (size_t i = 0; i < b.at("jobs").size(); ++i) {
    const auto& job = b.at("jobs")[i];
    EXPECT_EQ(a.at("jobs")[i].at("p99_step_s").get<double>(), 0.0);
    const double iteration =
        job.at("solo_s").get<double>() / job.at("done_iterations").get<double>();
    EXPECT_GE(job.at("p99_step_s").get<double>(), iteration * (1 - 1e-6)) << job.at("name");
    EXPECT_NEAR(job.at("finish_s").get<double>(), a.at("jobs")[i].at("finish_s").get<double>(),
                1e-6 * job.at("finish_s").get<double>());
  }
  const auto table = sim({"--jobs", jobs_data("tiresias_60_job.csv"), "--gpus", "1",
                          "--single-gpu-jobs", "--policy", "srtf", "--step-times"});
  EXPECT_NE(table.out.find("P99_STEP_S"), std::string::npos);
}

TEST(SimCommand, AlibabaPodListComparesPlacements) {
  const auto result =
      sim({"--jobs", jobs_data("alibaba2023_openb_pod_list_default.csv"), "--format", "json"});
  ASSERT_EQ(result.code, 0) << result.err;
  const auto json = nlohmann::json::parse(result.out);
  // Replay, all resident on the node list, all resident on an unbounded fleet: 3 strategies each.
  ASSERT_EQ(json.at("strategies").size(), 9u);
  EXPECT_EQ(json.at("strategies")[0].at("strategy"), "exclusive");
  EXPECT_EQ(json.at("strategies")[2].at("strategy"), "best-fit-static");
  EXPECT_EQ(json.at("strategies")[8].at("scenario"), "all-resident-unbounded");
  EXPECT_LT(json.at("strategies")[8].at("gpus_used_peak").get<int>(),
            json.at("strategies")[6].at("gpus_used_peak").get<int>());
}

TEST(SimCommand, UsageErrorsExitWithTwo) {
  EXPECT_EQ(sim({}).code, 2);
  const auto unknown =
      sim({"--jobs", jobs_data("tiresias_60_job.csv"), "--gpus", "8", "--policy", "lottery"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("unknown policy 'lottery', expected "
                             "fifo|srtf|pack|fair|fair-gputime|priority|salus-preempt"),
            std::string::npos);
  EXPECT_EQ(sim({"--jobs", "x.csv", "--bogus"}).code, 2);
  EXPECT_EQ(
      sim({"--jobs", jobs_data("tiresias_60_job.csv"), "--gpus", "eight", "--policy", "srtf"}).code,
      2);
}

TEST(SimCommand, BadInputExitsWithOneAndNamesTheFileAndLine) {
  const auto path = scratch_file("jobs.csv",
                                 "job_id,num_gpu,submit_time,iterations,model_name,duration\n"
                                 "0,1,0,10,vgg19\n");
  const auto result = sim({"--jobs", path, "--profiles", jobs_data("salus_workloads.csv"), "--gpus",
                           "1", "--policy", "fifo"});
  EXPECT_EQ(result.code, 1);
  EXPECT_EQ(result.err, "sim: " + path + ":2: expected 6 comma-separated fields, found 5\n");
  EXPECT_EQ(sim({"--jobs", "/nonexistent.csv", "--gpus", "1", "--policy", "fifo"}).code, 1);
}

// sim --hpo: the same trials one per GPU, with PACK and with water-filling. Trials at u = 0.5:
// water-filling puts two on each GPU (their utilizations sum to one GPU), so it doubles the
// utilization of one trial per GPU.
TEST(SimHpo, ComparesThePlacementsOfOneStudy) {
  const auto result =
      sim({"--hpo", "40", "--profiles", jobs_data("salus_workloads.csv"), "--model", "resnet50",
           "--gpus", "2", "--trial-s", "30", "--utilization", "0.5", "--format", "json"});
  ASSERT_EQ(result.code, 0) << result.err;
  const auto document = nlohmann::json::parse(result.out);
  ASSERT_EQ(document.at("placements").size(), 3u);
  const auto& one = document.at("placements")[0];
  const auto& fill = document.at("placements")[2];
  EXPECT_EQ(one.at("placement"), "one-per-gpu");
  EXPECT_EQ(fill.at("placement"), "waterfill");
  EXPECT_NEAR(fill.at("gpu_utilization").get<double>() / one.at("gpu_utilization").get<double>(),
              2.0, 0.05);
  EXPECT_LE(fill.at("gpu_utilization").get<double>(), 1.0 + 1e-9);
  EXPECT_EQ(document.at("utilization_source"), "--utilization");
  EXPECT_EQ(sim({"--hpo", "0", "--profiles", jobs_data("salus_workloads.csv"), "--model",
                 "resnet50", "--gpus", "1"})
                .code,
            2);
  EXPECT_EQ(sim({"--hpo", "4", "--profiles", jobs_data("salus_workloads.csv"), "--model",
                 "nosuchmodel", "--gpus", "1"})
                .code,
            2);
}

// share plan --hpo: the water-filling plan of a study. 40 trials at u = 0.5 on 2 GPUs: the first
// wave puts two trials on each GPU (their utilizations fill one GPU), each in a lane of its own;
// no GPU ever runs more than two at once, and a waiting trial starts when one finishes on that
// GPU. The plan is sim --hpo's water-filling run (one code path): same makespan.
TEST(SharePlanHpo, WaterFillsTrialsIntoLanesAndRefillsAsTheyFinish) {
  const std::vector<std::string> study{
      "--hpo",     "40",       "--profiles",    jobs_data("salus_workloads.csv"),
      "--model",   "resnet50", "--gpus",        "2",
      "--trial-s", "30",       "--utilization", "0.5",
      "--format",  "json"};
  const auto planned = plan(study);
  ASSERT_EQ(planned.code, 0) << planned.err;
  const auto document = nlohmann::json::parse(planned.out);
  EXPECT_EQ(document.at("first_wave"), 4);
  EXPECT_EQ(document.at("max_trials_per_gpu"), 2);
  const auto& trials = document.at("trials");
  ASSERT_EQ(trials.size(), 40u);
  double last_finish = 0;
  for (const auto& trial : trials) {
    const double start = trial.at("start_s");
    const double finish = trial.at("finish_s");
    const int gpu = trial.at("gpu");
    ASSERT_TRUE(gpu == 0 || gpu == 1) << trial.dump();
    EXPECT_GT(finish, start);
    last_finish = std::max(last_finish, finish);
    // At its start, at most one other trial runs on its GPU, in another lane.
    int running = 0;
    for (const auto& other : trials) {
      if (&other == &trial || other.at("gpu") != gpu) continue;
      if (other.at("start_s").get<double>() <= start && start < other.at("finish_s")) {
        ++running;
        EXPECT_NE(other.at("lane"), trial.at("lane")) << trial.dump() << other.dump();
      }
    }
    EXPECT_LE(running, 1) << trial.dump();
    // A trial of a later wave starts the moment a trial on its GPU finished.
    if (!trial.at("first_wave").get<bool>()) {
      bool refilled = false;
      for (const auto& other : trials) {
        refilled = refilled || (other.at("gpu") == gpu && other.at("finish_s") == start);
      }
      EXPECT_TRUE(refilled) << trial.dump();
    }
  }
  EXPECT_DOUBLE_EQ(document.at("makespan_s").get<double>(), last_finish);
  ASSERT_EQ(document.at("placements").size(), 3u);
  EXPECT_EQ(document.at("placements")[0].at("placement"), "one-per-gpu");
  EXPECT_NEAR(document.at("placements")[0].at("makespan_s").get<double>() /
                  document.at("makespan_s").get<double>(),
              2.0, 0.05);

  auto simulated_args = study;
  const auto simulated = sim(simulated_args);
  ASSERT_EQ(simulated.code, 0) << simulated.err;
  const auto sim_document = nlohmann::json::parse(simulated.out);
  EXPECT_DOUBLE_EQ(sim_document.at("placements")[2].at("makespan_s").get<double>(),
                   document.at("makespan_s").get<double>());

  // The table names the study, the waves and every trial.
  auto table_args = study;
  table_args.resize(table_args.size() - 2);
  const auto table = plan(table_args);
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("water-filling: 4 trials start at once (at most 2 per GPU"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("trial39"), std::string::npos);

  // Flags of the other mode are refused.
  auto mixed = study;
  mixed.insert(mixed.end(), {"--candidates", "c.json"});
  EXPECT_EQ(plan(mixed).code, 2);
  EXPECT_EQ(plan({"--candidates", "c.json", "--model", "resnet50"}).code, 2);
}

TEST(SimHpo, TrialDbTakesTheUtilizationTheAnalyzerMeasures) {
  // Without the analyzer wired in it is a clear failure.
  set_trial_loader(nullptr);
  const std::vector<std::string> args{
      "--hpo",      "10",       "--profiles", jobs_data("salus_workloads.csv"),
      "--model",    "resnet50", "--gpus",     "1",
      "--trial-db", "trial.db", "--format",   "json"};
  auto result = sim(args);
  EXPECT_EQ(result.code, 1);
  EXPECT_NE(result.err.find("needs the analyzer"), std::string::npos) << result.err;
  std::string asked;
  set_trial_loader([&](const std::string& path) {
    asked = path;
    return std::vector<TrialMeasurement>{{"trial/gpu0", 0.25, 0.1}};
  });
  result = sim(args);
  set_trial_loader(nullptr);
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_EQ(asked, "trial.db");
  const auto document = nlohmann::json::parse(result.out);
  EXPECT_DOUBLE_EQ(document.at("utilization").get<double>(), 0.25);
  EXPECT_NE(document.at("utilization_source").get<std::string>().find("trial.db (trial/gpu0)"),
            std::string::npos);
}

TEST(SharePlanCommand, PlansFromACandidatesFile) {
  const auto path = scratch_file("candidates.json", kCandidates);
  const auto json_result = plan({"--candidates", path, "--format", "json"});
  ASSERT_EQ(json_result.code, 0) << json_result.err;
  const auto json = nlohmann::json::parse(json_result.out);
  EXPECT_EQ(json.at("gpus_after"), 1);
  const auto table = plan({"--candidates", path, "--max-slowdown", "1.5"});
  ASSERT_EQ(table.code, 0);
  EXPECT_NE(table.out.find("GPUs: 2 -> 1 (1 freed)"), std::string::npos) << table.out;
}

TEST(SharePlanCommand, DatabaseWithoutALoaderIsAClearFailure) {
  set_candidate_loader(nullptr);
  const auto result = plan({"fleet.db"});
  EXPECT_EQ(result.code, 1);
  EXPECT_NE(result.err.find("cannot read fleet.db: no analyzer database reader is linked in"),
            std::string::npos);
}

TEST(SharePlanCommand, DatabasesGoThroughTheLoaderHook) {
  const auto path = scratch_file("candidates.json", kCandidates);
  std::vector<std::string> asked;
  int64_t context = -1;
  set_candidate_loader([&](const std::vector<std::string>& dbs, const MemoryModel& memory) {
    asked = dbs;
    context = memory.context_bytes;
    return CandidateSet{load_job_profiles(path), {"c on GPU 0: P and T unknown"}};
  });
  const auto config = scratch_file("fleetscoped.conf", "cuda_context_mib = 256\n");
  const auto result = plan({"one.db", "two.db", "--format=json", "--config", config});
  const auto table = plan({"one.db", "--config", config});
  set_candidate_loader(nullptr);
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_EQ(asked, std::vector<std::string>{"one.db"});  // the table run came last
  EXPECT_EQ(context, 256 * kMiB);                        // the host's memory model
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json.at("gpus_before"), 2);
  EXPECT_EQ(json.at("context_bytes"), 256 * kMiB);
  EXPECT_EQ(json.at("context_source"), config);
  EXPECT_EQ(json.at("not_planned"), nlohmann::json::array({"c on GPU 0: P and T unknown"}));
  EXPECT_NE(table.out.find("not planned: c on GPU 0: P and T unknown"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("CUDA context per job: 256 MiB (" + config + ")"), std::string::npos)
      << table.out;
}

TEST(SharePlanCommand, UsageAndInputErrors) {
  EXPECT_EQ(plan({"--help"}).code, 0);
  EXPECT_EQ(plan({}).code, 2);
  EXPECT_EQ(plan({"--candidates", "x.json", "--max-slowdown", "0.5"}).code, 2);
  EXPECT_EQ(plan({"--candidates", "x.json", "--format", "csv"}).code, 2);
  const auto bad = scratch_file("bad.json", R"([{"job_id": "a"}])");
  const auto result = plan({"--candidates", bad});
  EXPECT_EQ(result.code, 1);
  EXPECT_EQ(result.err, "share plan: " + bad + ": element 0: missing field 'gpu'\n");
}

}  // namespace
}  // namespace fleetscope::sharer
