// The simulator applies the planner's interference model (issue 25): the measured asymmetric
// pair terms through InterferenceModel::lane_factor, on GPU phases only, re-evaluated when a
// lane's co-runners change. Every expectation here fails with a global alpha.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fleetscope/sharer/interference.h"
#include "fleetscope/sharer/planner.h"
#include "fleetscope/sharer/policy.h"
#include "fleetscope/sharer/simulator.h"
#include "test_paths.h"

namespace fleetscope::sharer {
namespace {

SimJob compute_bound(int64_t id, std::string workload, int64_t iterations) {
  SimJob job;
  job.id = id;
  job.name = workload;
  job.workload = std::move(workload);
  job.iterations = iterations;
  job.iteration_s = 1;
  job.utilization = 1;
  job.memory = MemoryDemand{kGiB, 6 * kGiB, 0};
  return job;
}

SimConfig two_lanes(InterferenceModel model) {
  SimConfig config;
  config.lanes = true;
  config.switch_cost_s = 0;
  config.interference = std::move(model);
  return config;
}

// Two compute-bound lanes: throughput bound p = 2. "a" next to "b" is measured at alpha 0.5, "b"
// next to "a" at 0, the global alpha is 0. While both run, a's GPU phases take 2 x 1.5 = 3 times
// as long, b's 2 times: b's 2 iterations end at 4 s; a has done 4 / 3 iterations by then and
// runs the other 26 / 3 alone: 4 + 26 / 3 = 12.667 s. The global alpha (0) gives 4 and 12; a
// factor fixed at a's start (3) would give 30 s; a global 0.5 would finish b at 6 s.
TEST(SimulatorPairTerms, AsymmetricTermsApplyWhileTheNeighbourRuns) {
  InterferenceModel model;
  model.alpha = 0;
  model.pair_alpha = {{"a+b", 0.5}, {"b+a", 0.0}};
  for (const bool fast_forward : {true, false}) {
    auto config = two_lanes(model);
    config.fast_forward = fast_forward;
    const auto result =
        simulate({compute_bound(0, "a", 10), compute_bound(1, "b", 2)}, SrtfPolicy{}, config);
    EXPECT_NEAR(result.jobs[1].finish_s, 4.0, 1e-9) << "fast_forward " << fast_forward;
    EXPECT_NEAR(result.jobs[0].finish_s, 4.0 + 26.0 / 3.0, 1e-9) << "fast_forward " << fast_forward;
  }
  // Unnamed jobs and unmeasured pairs fall back to the global alpha.
  auto config = two_lanes(model);
  const auto unnamed =
      simulate({compute_bound(0, "", 10), compute_bound(1, "", 2)}, SrtfPolicy{}, config);
  EXPECT_NEAR(unnamed.jobs[1].finish_s, 4.0, 1e-9);
  EXPECT_NEAR(unnamed.jobs[0].finish_s, 12.0, 1e-9);
}

// The lane's factor is the same function the planner predicts with.
TEST(SimulatorPairTerms, LaneFactorIsTheWorstMembersTerm) {
  InterferenceModel model;
  model.alpha = 0.1;
  model.pair_alpha = {{"a+b", 0.5}, {"b+a", 0.0}, {"c+b", 0.3}};
  const std::vector<double> demands{1.0, 1.0};
  // Lane 0 holds a and c (the worst, a+b = 0.5, counts), lane 1 holds b.
  EXPECT_DOUBLE_EQ(model.lane_factor(0, demands, {{"a", "c"}, {"b"}}), 2.0 * 1.5);
  EXPECT_DOUBLE_EQ(model.lane_factor(1, demands, {{"a", "c"}, {"b"}}), 2.0 * 1.1);  // b+c: global
  // No workloads given: the global alpha.
  EXPECT_DOUBLE_EQ(model.lane_factor(0, demands, {}), model.parallel_slowdown(0, demands));
}

// The H100 calibration: the full-duty GEMM next to the half-duty one measured 2.1468x, its
// partner 1.1488x. A plan that keeps them in parallel lanes replays in the simulator at the
// planner's predictions (each side from its own pair term); with the global alpha the replay
// put the full-duty one at 1.63x.
TEST(SimulatorPairTerms, ReplayOfAPlanWithMeasuredPairsMatchesItsPrediction) {
  const auto calibration = interference_from_file(std::string(FLEETSCOPE_SHARER_DATA_DIR) +
                                                  "/h100_colocation_2026-11-26.csv");
  ASSERT_FALSE(calibration.model.pair_alpha.empty());
  PlannerOptions options;
  options.max_slowdown = 3.0;
  options.interference = calibration.model;
  const auto make = [](std::string id, double utilization, std::string workload) {
    JobProfile profile;
    profile.job_id = id;
    profile.workflow = id;
    profile.gpu = "gpu-" + id;
    profile.persistent_bytes = kGiB;
    profile.ephemeral_peak_bytes = kGiB;
    profile.gpu_capacity_bytes = 80 * kGiB;
    profile.utilization = utilization;
    profile.iteration_ns = 100'000'000;
    profile.labels = {{"workload", std::move(workload)}, {"class", "latency"}};
    return profile;
  };
  const std::vector<JobProfile> jobs{make("full", 0.9712, "compute@1.0"),
                                     make("half", 0.4706, "compute@0.5")};
  const auto plan = plan_consolidation(jobs, options);
  ASSERT_EQ(plan.gpus_after, 1);
  const auto replay = replay_plan(jobs, plan, options);
  ASSERT_EQ(replay.size(), 2u);
  for (const auto& row : replay) {
    EXPECT_NEAR(row.simulated_slowdown, row.predicted_slowdown, 0.01 * row.predicted_slowdown)
        << row.job_id;
  }
  EXPECT_NEAR(replay[0].simulated_slowdown, 2.1468, 0.01);
  EXPECT_LT(replay[1].simulated_slowdown, 1.5);
}

// A trace names its jobs' workloads in an optional `workload` column.
TEST(SimulatorPairTerms, TraceWorkloadColumnNamesTheJobsWorkload) {
  const auto profiles = load_salus_profiles(testing::jobs_data("salus_workloads.csv"));
  const auto jobs = parse_tiresias_jobs(
      "job_id,num_gpu,submit_time,iterations,model_name,duration,workload\n"
      "1,1,0,100,resnet50,100,compute@1.0\n"
      "2,1,0,100,resnet50,100,\n",
      "trace.csv", profiles);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].workload, "compute@1.0");
  EXPECT_EQ(jobs[1].workload, "");
}

}  // namespace
}  // namespace fleetscope::sharer
