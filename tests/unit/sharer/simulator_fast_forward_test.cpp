// The simulator's closed-form lane advance against stepping every iteration (fast_forward off):
// the same start, finish, preemptions and completed iterations for every job, on random small
// traces and on the Tiresias trace, under every policy; and the contention model applied to GPU
// phases only, re-evaluated when a lane's co-runners change (hand-computed).

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "fleetscope/sharer/policy.h"
#include "fleetscope/sharer/simulator.h"
#include "fleetscope/sharer/workload.h"
#include "test_paths.h"

namespace fleetscope::sharer {
namespace {

// Equal to 1e-9 relative: the closed form multiplies where stepping adds, so the last bits of a
// time may differ. (Traces whose events coincide exactly in real arithmetic, e.g. an arrival at
// the very end of an iteration, are left out: there the order of two equal times is decided by
// rounding, in either mode.)
void expect_same_schedule(const SimResult& fast, const SimResult& stepped,
                          const std::string& what) {
  ASSERT_EQ(fast.jobs.size(), stepped.jobs.size());
  for (size_t i = 0; i < fast.jobs.size(); ++i) {
    const auto& a = fast.jobs[i];
    const auto& b = stepped.jobs[i];
    const auto near = [](double x, double y) {
      return std::abs(x - y) <= 1e-9 * std::max(1.0, std::abs(y));
    };
    EXPECT_TRUE(near(a.start_s, b.start_s))
        << what << " job " << i << " start " << a.start_s << " vs " << b.start_s;
    EXPECT_TRUE(near(a.finish_s, b.finish_s))
        << what << " job " << i << " finish " << a.finish_s << " vs " << b.finish_s;
    EXPECT_EQ(a.finished, b.finished) << what << " job " << i;
    EXPECT_EQ(a.done_iterations, b.done_iterations) << what << " job " << i;
    EXPECT_EQ(a.preemptions, b.preemptions) << what << " job " << i;
  }
}

std::pair<SimResult, SimResult> both_ways(const std::vector<SimJob>& jobs, const Policy& policy,
                                          SimConfig config) {
  config.fast_forward = true;
  auto fast = simulate(jobs, policy, config);
  config.fast_forward = false;
  auto stepped = simulate(jobs, policy, config);
  return {std::move(fast), std::move(stepped)};
}

TEST(SimulatorFastForward, RandomTracesScheduleAsSteppingDoesUnderEveryPolicy) {
  std::mt19937_64 rng(20261126);
  const auto uniform = [&](double low, double high) {
    return std::uniform_real_distribution<double>(low, high)(rng);
  };
  const auto integer = [&](int low, int high) {
    return std::uniform_int_distribution<int>(low, high)(rng);
  };
  int64_t stepped_fast = 0;
  int64_t stepped_reference = 0;
  for (int trace = 0; trace < 150; ++trace) {
    SimConfig config;
    config.gpus = integer(1, 3);
    config.lanes = integer(0, 1) == 1;
    config.switch_cost_s = integer(0, 1) == 1 ? 0.0 : 0.005;
    config.interference.alpha = integer(0, 2) == 0 ? 0.1 : 0.0;
    if (integer(0, 3) == 0) config.stop_at_s = uniform(5, 400);
    std::vector<SimJob> jobs;
    const int count = integer(2, 12);
    for (int i = 0; i < count; ++i) {
      SimJob job;
      job.id = i;
      job.name = "j" + std::to_string(i);
      job.submit_s = integer(0, 3) == 0 ? 0 : uniform(0, 60);
      job.iterations = integer(1, 3) == 1 ? integer(1, 5) : integer(10, 2000);
      job.iteration_s = uniform(0.02, 1.5);
      job.utilization = integer(0, 2) == 0 ? 1.0 : uniform(0.05, 1.0);
      job.num_gpu = integer(0, 9) == 0 ? std::min(2, config.gpus) : 1;
      job.memory = MemoryDemand{integer(1, 5) * kGiB, integer(0, 3) * kGiB, -1};
      job.priority = integer(0, 3) == 0 ? 1 : 0;
      jobs.push_back(job);
    }
    for (const auto& name : policy_names()) {
      const auto policy = make_policy(name);
      const auto [fast, stepped] = both_ways(jobs, *policy, config);
      expect_same_schedule(fast, stepped, "trace " + std::to_string(trace) + " " + name);
      stepped_fast += fast.stepped_iterations;
      stepped_reference += stepped.stepped_iterations;
    }
  }
  // The closed form did most of the work.
  EXPECT_LT(stepped_fast * 3, stepped_reference);
}

TEST(SimulatorFastForward, TiresiasTraceSchedulesAsSteppingDoes) {
  const auto profiles = load_salus_profiles(testing::jobs_data("salus_workloads.csv"));
  const auto jobs = load_tiresias_jobs(testing::jobs_data("tiresias_60_job.csv"), profiles);
  for (const bool lanes : {false, true}) {
    SimConfig config;
    config.gpus = 8;
    config.lanes = lanes;
    for (const auto& name : policy_names()) {
      const auto policy = make_policy(name);
      const auto [fast, stepped] = both_ways(jobs, *policy, config);
      expect_same_schedule(fast, stepped, name + (lanes ? " lanes on" : " lanes off"));
      EXPECT_EQ(fast.avg_jct_s > 0, true);
    }
  }
}

TEST(SimulatorFastForward, AJobAloneCostsAFewStepsWhateverItsIterations) {
  SimJob job;
  job.name = "long";
  job.iterations = 100000000;
  job.iteration_s = 0.1;
  job.utilization = 0.5;
  job.memory = MemoryDemand{kGiB, kGiB, -1};
  SimConfig config;
  const auto result = simulate({job}, SrtfPolicy{}, config);
  EXPECT_LE(result.stepped_iterations, 3);
  EXPECT_NEAR(result.jobs[0].finish_s, 1e7, 1e-3);
  EXPECT_EQ(result.jobs[0].done_iterations, 100000000);
}

// Two compute-bound jobs in lanes of their own, alpha = 0: while both run the GPU is asked for
// twice what it has, so a GPU phase progresses at half speed. A (10 iterations of 1 s) is 0.25 s
// into its third iteration when B (one iteration of 0.5 s) arrives at 2.25. B's 0.5 s of work
// takes 1 s (ends 3.25); by then A did 0.5 s of the 0.75 s it had left and does the last 0.25 s
// alone (ends 3.5); seven more iterations end A at 10.5. (Fixing each iteration's factor at its
// start, as the simulator used to, ran A's third iteration at full speed and its fourth at half
// speed throughout: A ended at 11.)
TEST(SimulatorContention, FactorChangesWhenCoRunnersChange) {
  SimConfig config;
  config.lanes = true;
  config.switch_cost_s = 0;
  config.interference.alpha = 0;
  SimJob a;
  a.id = 0;
  a.name = "A";
  a.iterations = 10;
  a.iteration_s = 1;
  a.memory = MemoryDemand{kGiB, 6 * kGiB, 0};
  SimJob b = a;
  b.id = 1;
  b.name = "B";
  b.iterations = 1;
  b.iteration_s = 0.5;
  b.submit_s = 2.25;
  for (const bool fast_forward : {true, false}) {
    config.fast_forward = fast_forward;
    const auto result = simulate({a, b}, SrtfPolicy{}, config);
    EXPECT_DOUBLE_EQ(result.jobs[1].finish_s, 3.25);
    EXPECT_DOUBLE_EQ(result.jobs[0].finish_s, 10.5);
  }
}

// Contention stretches the GPU phase, not the host phase: a job at utilization 0.5 beside a
// compute-bound lane: the GPU phases of both are stretched by p with 1 / p + 0.5 / (1 + 0.5
// (p - 1)) = 1, p = (1 + sqrt 5) / 2, so its 1 s iterations take 0.5 p + 0.5 (stretching whole
// iterations by max(1, U) = 1.5 would give 1.5 s; the GPU's work per second is 1 either way).
TEST(SimulatorContention, HostPhaseIsNotStretched) {
  SimConfig config;
  config.lanes = true;
  config.switch_cost_s = 0;
  config.interference.alpha = 0;
  SimJob busy;
  busy.id = 0;
  busy.name = "busy";
  busy.iterations = 100;
  busy.iteration_s = 1;
  busy.memory = MemoryDemand{kGiB, 6 * kGiB, 0};
  SimJob half = busy;
  half.id = 1;
  half.name = "half";
  half.iterations = 4;
  half.utilization = 0.5;
  const auto result = simulate({busy, half}, SrtfPolicy{}, config);
  const double p = (1 + std::sqrt(5.0)) / 2;
  EXPECT_NEAR(result.jobs[1].finish_s, 4 * (0.5 * p + 0.5), 1e-9);
}

}  // namespace
}  // namespace fleetscope::sharer
