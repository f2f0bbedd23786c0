// Issue 12: the sharer model against Salus's semantics — one test per finding: admission cost,
// SRTF within a lane, the lane allocator's order, CUDA context memory, bounded and calibrated
// interference, planner/simulator agreement, starvation of multi-GPU jobs.

#include <gtest/gtest.h>

#include <random>

#include <nlohmann/json.hpp>
#include <sstream>

#include "fleetscope/sharer/commands.h"
#include "fleetscope/sharer/lane_allocator.h"
#include "fleetscope/sharer/planner.h"
#include "fleetscope/sharer/simulator.h"
#include "test_paths.h"

namespace fleetscope::sharer {
namespace {

SimJob job(int64_t id, double submit_s, int64_t iterations, double iteration_s = 1.0,
           int num_gpu = 1) {
  SimJob j;
  j.id = id;
  j.name = "j" + std::to_string(id);
  j.submit_s = submit_s;
  j.iterations = iterations;
  j.iteration_s = iteration_s;
  j.num_gpu = num_gpu;
  j.memory = MemoryDemand{kGiB, kGiB, 0};
  return j;
}

// 1. Admission is decided on arrivals and finishes only, and a waiting job is re-tried only on
// GPUs that changed: placement checks grow with events, not with events x waiting jobs x GPUs.
// (Speed itself is measured in bench/sharer, not asserted here.)
TEST(SharerModel, QueuedTraceCostsPlacementChecksLinearInEvents) {
  std::mt19937 random(7);
  std::vector<SimJob> jobs;
  for (int i = 0; i < 4000; ++i) {
    jobs.push_back(job(i, i * 0.5, 1 + static_cast<int64_t>(random() % 20),
                       1.0 + static_cast<double>(random() % 10), i % 50 == 0 ? 4 : 1));
  }
  SimConfig config;
  config.gpus = 32;  // about 4x oversubscribed: a queue of thousands forms
  for (const auto& name : policy_names()) {
    for (bool lanes : {false, true}) {
      config.lanes = lanes;
      const auto result = simulate(jobs, *make_policy(name), config);
      for (const auto& row : result.jobs) ASSERT_TRUE(row.finished) << name;
      EXPECT_GT(result.max_wait_single_gpu_s, 100) << "no queue formed";
      // Events are arrivals and finishes. Per admission round each examined waiting job (at most
      // the backfill window) probes only the GPUs that changed since it last failed, and a new
      // job every GPU once: at most (window + GPUs) probes per event. The earlier engine probed
      // every waiting job (1,000s) on every GPU (32) at every iteration end.
      EXPECT_LT(result.placement_probes,
                static_cast<int64_t>(config.backfill_window + config.gpus) * result.events)
          << name << " lanes " << lanes;
    }
  }
}

// 2. SRTF within one lane runs one job at a time (Salus's SRTF); with the lane manager on,
// jobs that fit in memory get parallel lanes instead.
TEST(SharerModel, SrtfRunsOneJobAtATimePerLane) {
  SimConfig config;
  config.lanes = false;
  config.switch_cost_s = 0;
  const std::vector<SimJob> jobs{job(0, 0, 10), job(1, 0, 5), job(2, 0, 1)};
  const auto one_lane = simulate(jobs, SrtfPolicy{}, config);
  // Shortest first, one at a time: C 0-1, B 1-6, A 6-16.
  EXPECT_DOUBLE_EQ(one_lane.jobs[2].finish_s, 1);
  EXPECT_DOUBLE_EQ(one_lane.jobs[1].finish_s, 6);
  EXPECT_DOUBLE_EQ(one_lane.jobs[0].finish_s, 16);
  config.lanes = true;
  const auto parallel = simulate(jobs, SrtfPolicy{}, config);
  // Three lanes of compute-bound jobs share the GPU's throughput: everyone stretched 3x at first.
  EXPECT_DOUBLE_EQ(parallel.jobs[2].finish_s, 3);
  EXPECT_GT(parallel.avg_jct_s, one_lane.avg_jct_s);
}

TEST(SharerModel, SimDefaultsToOneLanePerGpuExceptForPacking) {
  const auto run = [](const std::string& policy) {
    std::ostringstream out, err;
    const int code = run_sim_command({"--jobs", testing::jobs_data("tiresias_60_job.csv"), "--gpus",
                                      "8", "--policy", policy, "--format", "json"},
                                     out, err);
    EXPECT_EQ(code, 0) << err.str();
    return nlohmann::json::parse(out.str()).at("lanes").get<bool>();
  };
  EXPECT_FALSE(run("srtf"));  // Salus's SRTF setting: the lane manager off
  EXPECT_FALSE(run("fair"));
  EXPECT_TRUE(run("pack"));
}

// 4. Each job's process holds a CUDA context: counted, inference services that fit without it
// do not all fit with it.
TEST(SharerModel, CudaContextMemoryIsCountedPerJob) {
  std::vector<SimJob> services;
  for (int i = 0; i < 57; ++i) {
    auto s = job(i, 0, 1);
    s.memory = MemoryDemand{200 * kMiB, 60 * kMiB, 0};
    services.push_back(s);
  }
  SimConfig config;
  config.lanes = true;
  config.memory.context_bytes = 0;
  EXPECT_EQ(simulate(services, PackPolicy{}, config).jobs.back().start_s, 0);  // all at once
  config.memory.context_bytes = 300 * kMiB;
  const auto with_context = simulate(services, PackPolicy{}, config);
  int started_at_once = 0;
  for (const auto& row : with_context.jobs) started_at_once += row.start_s == 0 ? 1 : 0;
  // 16 GiB / (300 + 200 + 60 MiB, rounded to 2 MiB) = 29 lanes.
  EXPECT_EQ(started_at_once, 29);
}

// 5. The contention term is bounded: many compute-bound lanes slow by the GPU's throughput
// bound times at most (1 + alpha), not without limit.
TEST(SharerModel, InterferenceIsBoundedByTheGpusThroughput) {
  InterferenceModel model{0.1};
  EXPECT_DOUBLE_EQ(model.parallel_slowdown(1, 22), 22 * 1.1);
  EXPECT_DOUBLE_EQ(model.parallel_slowdown(0.2, 0.5), 1 + 0.1 * 0.3);
  EXPECT_DOUBLE_EQ(InterferenceModel{}.parallel_slowdown(1, 2), 2.0);  // uncalibrated default
}

TEST(SharerModel, CalibrationFitsAlphaFromAMeasurementFile) {
  // Runs generated from alpha = 0.25: iteration slowdown = u * p * (1 + 0.25 * min(1, others)) +
  // 1 - u, p the throughput bound (2 for two compute-bound lanes, 3 for three, 1 at U <= 1).
  const auto path = testing::scratch_file("colocation.csv",
                                          "own_utilization,others_utilization,measured_slowdown,"
                                          "pair\n"
                                          "0.5,0.5,1.0625,a+b\n"
                                          "1.0,1.0,2.5,c+c\n"
                                          "1.0,2.0,3.75,d+2x\n");
  const auto runs = load_colocation_runs(path);
  ASSERT_EQ(runs.size(), 3u);
  const auto model = calibrate_interference(runs);
  EXPECT_NEAR(model.alpha, 0.25, 1e-12);
  EXPECT_NEAR(prediction_rms_error(model, runs), 0, 1e-12);
  const auto bad = testing::scratch_file("bad.csv",
                                         "own_utilization,others_utilization,measured_slowdown\n"
                                         "0.5,nan,1.1\n");
  try {
    load_colocation_runs(bad);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(bad + ":2: column 2 (others_utilization)"),
              std::string::npos)
        << error.what();
  }
}

// 6. The simulator replays the planner's plans and agrees with its predictions.
TEST(SharerModel, ReplayedPlansAgreeWithPredictedSlowdownsWithinTenPercent) {
  std::mt19937 random(11);
  for (int fleet = 0; fleet < 20; ++fleet) {
    std::vector<JobProfile> jobs;
    for (int g = 0; g < 12; ++g) {
      JobProfile profile;
      profile.job_id = "f" + std::to_string(fleet) + "j" + std::to_string(g);
      profile.gpu = "gpu" + std::to_string(g);
      profile.persistent_bytes = static_cast<int64_t>(1 + random() % 4) * kGiB;
      profile.ephemeral_peak_bytes = static_cast<int64_t>(random() % 4) * kGiB;
      profile.gpu_capacity_bytes = 16 * kGiB;
      profile.utilization = 0.05 + 0.5 * static_cast<double>(random() % 100) / 100.0;
      profile.iteration_ns = static_cast<int64_t>(50 + random() % 200) * 1'000'000;
      jobs.push_back(profile);
    }
    PlannerOptions options;
    options.interference.alpha = 0.1;
    const auto plan = plan_consolidation(jobs, options);
    const auto replay = replay_plan(jobs, plan, options);
    ASSERT_FALSE(replay.empty());
    for (const auto& row : replay) {
      EXPECT_NEAR(row.simulated_slowdown / row.predicted_slowdown, 1.0, 0.10)
          << "fleet " << fleet << " job " << row.job_id << " predicted " << row.predicted_slowdown
          << " simulated " << row.simulated_slowdown;
    }
  }
}

TEST(SharerModel, ReplayOfAPlanWithIterationTimesSpanningNineDecadesIsRefused) {
  // Found by the candidates fuzz target: 1 s and 500 ns iterations on one GPU would need millions
  // of simulated iterations.
  JobProfile slow;
  slow.job_id = "slow";
  slow.gpu = "g0";
  slow.persistent_bytes = kGiB;
  slow.gpu_capacity_bytes = 16 * kGiB;
  slow.utilization = 0.2;
  slow.iteration_ns = 1'000'000'000;
  JobProfile fast = slow;
  fast.job_id = "fast";
  fast.gpu = "g1";
  fast.utilization = 0.1;
  fast.iteration_ns = 500;
  const std::vector<JobProfile> jobs{slow, fast};
  const auto plan = plan_consolidation(jobs);
  ASSERT_EQ(plan.gpus_after, 1);
  EXPECT_THROW(replay_plan(jobs, plan, PlannerOptions{}), std::invalid_argument);
  // 1 s against 1 ms is replayed (within the 2e5-iteration budget).
  auto milli = jobs;
  milli[1].iteration_ns = 1'000'000;
  const auto replay = replay_plan(milli, plan_consolidation(milli), PlannerOptions{});
  EXPECT_EQ(replay.size(), 2u);
}

// 8. A multi-GPU job does not starve behind a stream of small jobs: after the bound it reserves
// GPUs, which drain.
TEST(SharerModel, MultiGpuJobsWaitAtMostTheStarvationBoundPlusADrain) {
  std::vector<SimJob> jobs;
  jobs.push_back(job(0, 0, 100, 1.0, 1));
  jobs.push_back(job(1, 1, 10, 1.0, 2));                             // needs both GPUs
  for (int i = 2; i < 400; ++i) jobs.push_back(job(i, i * 0.5, 3));  // short jobs keep coming
  SimConfig config;
  config.gpus = 2;
  config.lanes = false;
  config.starvation_bound_s = std::numeric_limits<double>::infinity();
  const auto starved = simulate(jobs, SrtfPolicy{}, config);
  config.starvation_bound_s = 20;
  const auto aged = simulate(jobs, SrtfPolicy{}, config);
  // Without aging it waits until the stream of short jobs ends (about 200 s of arrivals).
  EXPECT_GT(starved.max_wait_multi_gpu_s, 190);
  // With it: the bound (20 s) plus the drain of what the two reserved GPUs hold then: job 0
  // (100 s) and at most 7 short jobs per GPU (memory: 16 GiB / 2.3 GiB), 3 s each.
  EXPECT_LE(aged.max_wait_multi_gpu_s, 20 + 100 + 2 * 7 * 3);
  EXPECT_LT(aged.max_wait_multi_gpu_s, starved.max_wait_multi_gpu_s);
}

// Termination: impossible jobs and flags are rejected instead of running for ever.
TEST(SharerModel, ImpossibleJobsAndConfigurationsAreRejected) {
  SimConfig config;
  auto nan_submit = job(0, std::numeric_limits<double>::quiet_NaN(), 1);
  EXPECT_THROW(simulate({nan_submit}, FifoExclusivePolicy{}, config), std::invalid_argument);
  auto endless = job(0, 0, std::numeric_limits<int64_t>::max());
  EXPECT_THROW(simulate({endless}, FifoExclusivePolicy{}, config), std::invalid_argument);
  auto negative = job(0, 0, 1, -1.0);
  EXPECT_THROW(simulate({negative}, FifoExclusivePolicy{}, config), std::invalid_argument);
  auto infinite = job(0, 0, 1, std::numeric_limits<double>::infinity());
  EXPECT_THROW(simulate({infinite}, FifoExclusivePolicy{}, config), std::invalid_argument);
  SimConfig inf_alpha;
  inf_alpha.interference.alpha = std::numeric_limits<double>::infinity();
  EXPECT_THROW(simulate({job(0, 0, 1)}, SrtfPolicy{}, inf_alpha), std::invalid_argument);
  SimConfig huge;
  huge.gpus = 100000000;
  EXPECT_THROW(simulate({job(0, 0, 1)}, SrtfPolicy{}, huge), std::invalid_argument);
}

}  // namespace
}  // namespace fleetscope::sharer
