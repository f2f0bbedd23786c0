// Each policy on small traces whose schedules are computed by hand. One GPU whose single lane is
// time-shared (--lanes off), 1 s iterations, no switch cost unless stated, no interference.

#include <gtest/gtest.h>

#include <limits>

#include "fleetscope/sharer/policy.h"
#include "fleetscope/sharer/simulator.h"

namespace fleetscope::sharer {
namespace {

SimJob make(int64_t id, double submit_s, int64_t iterations, int num_gpu = 1, int priority = 0) {
  SimJob job;
  job.id = id;
  job.name = std::string(1, static_cast<char>('A' + id));
  job.submit_s = submit_s;
  job.iterations = iterations;
  job.iteration_s = 1.0;
  job.num_gpu = num_gpu;
  job.memory = MemoryDemand{kGiB, kGiB, -1};
  job.priority = priority;
  return job;
}

SimConfig one_lane(int gpus = 1) {
  SimConfig config;
  config.gpus = gpus;
  config.lanes = false;
  config.switch_cost_s = 0;
  config.interference.alpha = 0;
  return config;
}

std::vector<double> finishes(const SimResult& result) {
  std::vector<double> out;
  for (const auto& job : result.jobs) out.push_back(job.finish_s);
  return out;
}

// A: t=0, 4 iterations. B: t=1, 2 iterations. C: t=2, 1 iteration.
std::vector<SimJob> three_jobs(int priority_a = 0, int priority_c = 0) {
  return {make(0, 0, 4, 1, priority_a), make(1, 1, 2), make(2, 2, 1, 1, priority_c)};
}

TEST(PolicySchedule, FifoRunsEachJobAloneInArrivalOrder) {
  // A 0-4, B 4-6, C 6-7.
  const auto result = simulate(three_jobs(), FifoExclusivePolicy{}, one_lane());
  EXPECT_EQ(finishes(result), (std::vector<double>{4, 6, 7}));
  EXPECT_DOUBLE_EQ(result.avg_jct_s, (4.0 + 5.0 + 5.0) / 3);
  EXPECT_DOUBLE_EQ(result.makespan_s, 7);
  EXPECT_EQ(result.gpus_used_peak, 1);
}

TEST(PolicySchedule, SrtfPreemptsForShorterRemainingTimeAtIterationBoundaries) {
  // A 0-1; B (2 left < A's 3) 1-3 (at 2, C ties B at 1 left; B arrived first); C 3-4; A 4-7.
  const auto result = simulate(three_jobs(), SrtfPolicy{}, one_lane());
  EXPECT_EQ(finishes(result), (std::vector<double>{7, 3, 4}));
  EXPECT_DOUBLE_EQ(result.avg_jct_s, (7.0 + 2.0 + 2.0) / 3);
  EXPECT_EQ(result.jobs[0].preemptions, 1);
}

TEST(PolicySchedule, PackRoundRobinsInsideTheLane) {
  // A 0-1, B 1-2, C 2-3 (done), A 3-4, B 4-5 (done), A 5-7.
  const auto result = simulate(three_jobs(), PackPolicy{}, one_lane());
  EXPECT_EQ(finishes(result), (std::vector<double>{7, 5, 3}));
  EXPECT_DOUBLE_EQ(result.avg_jct_s, 4.0);
}

TEST(PolicySchedule, FairGpuTimeServesLeastAttainedServiceFirst) {
  // Same turns as round robin here: A 0-1, B 1-2, C 2-3, A 3-4 (tie with B, earlier), B 4-5, A 5-7.
  const auto result = simulate(three_jobs(), FairGpuTimePolicy{}, one_lane());
  EXPECT_EQ(finishes(result), (std::vector<double>{7, 5, 3}));
}

TEST(PolicySchedule, FairGpuTimeDiffersFromRoundRobinAfterUnequalService) {
  // A alone 0-3 (3 s attained). B arrives at 3: fair gives B turns until it catches up:
  // B 3-4, 4-5 (B=2 < A=3), at 5 B=2 < 3: B 5-6 done (3 iterations). A 6-7 done.
  const std::vector<SimJob> jobs{make(0, 0, 4), make(1, 3, 3)};
  EXPECT_EQ(finishes(simulate(jobs, FairGpuTimePolicy{}, one_lane())), (std::vector<double>{7, 6}));
  // Round robin alternates instead: A 3-4, B... A already ran 0-3; at 3 B (never ran) goes first:
  // B 3-4, A 4-5 (done: 4 iterations), B 5-7.
  EXPECT_EQ(finishes(simulate(jobs, PackPolicy{}, one_lane())), (std::vector<double>{5, 7}));
}

// Salus's FAIR: least memory x time, persistent memory (P) all the time, ephemeral (T) during
// GPU phases, every counter reset when a job joins. A: P 1 GiB, T 2.5 GiB, 3 iterations; B: P 3
// GiB, T 0, 2 iterations; both at 0 (counters in GiB*s).
//   0: A 0 = B 0, A first by id: A 0-1. 1: A 1 + 2.5 = 3.5 > B 3: B 1-2.
//   2: A 2 + 2.5 = 4.5 < B 6: A 2-3. 3: A 3 + 5 = 8 < B 9: A 3-4 done. B 4-5 done.
// Least GPU time alternates instead: A 0-1, B 1-2, A 2-3, B 3-4 done, A 4-5 done.
TEST(PolicySchedule, FairIsSalusMemoryTimeWithResetOnArrival) {
  auto a = make(0, 0, 3);
  a.memory = MemoryDemand{kGiB, 5 * kGiB / 2, -1};
  auto b = make(1, 0, 2);
  b.memory = MemoryDemand{3 * kGiB, 0, -1};
  EXPECT_EQ(finishes(simulate({a, b}, FairPolicy{}, one_lane())), (std::vector<double>{4, 5}));
  EXPECT_EQ(finishes(simulate({a, b}, FairGpuTimePolicy{}, one_lane())),
            (std::vector<double>{5, 4}));
  // C (P 1 GiB, T 0, one iteration) joins at 2 and every counter restarts: A 0 = B 0 = C 0, A
  // first (earliest submit): A 2-3. 3: A 1 + 2.5 = 3.5, B 3, C 1: C 3-4 done. 4: A 2 + 2.5 = 4.5
  // < B 6: A 4-5 done. B 5-6 done. (Without the reset C, at 0, would have run at 2.)
  auto c = make(2, 2, 1);
  c.memory = MemoryDemand{kGiB, 0, -1};
  EXPECT_EQ(finishes(simulate({a, b, c}, FairPolicy{}, one_lane())),
            (std::vector<double>{5, 6, 4}));
}

// Salus's trace-run scheduler: the newest job runs, the others wait; at most 11 per GPU whatever
// their memory. A (4 iterations) at 0, B (2) at 1, C (1) at 2: A 0-1, B 1-2, C 2-3, B 3-4, A 4-7.
TEST(PolicySchedule, SalusPreemptRunsTheNewestJob) {
  const auto result = simulate(three_jobs(), SalusPreemptPolicy{}, one_lane());
  EXPECT_EQ(finishes(result), (std::vector<double>{7, 4, 3}));
  // Twelve jobs of 20 GiB each on one 16 GiB GPU: memory is paged to host, so 11 run at once and
  // the twelfth waits for the first finish.
  std::vector<SimJob> many;
  for (int i = 0; i < 12; ++i) {
    auto job = make(i, 0, 1);
    job.memory = MemoryDemand{20 * kGiB, 0, -1};
    many.push_back(job);
  }
  const auto paged = simulate(many, SalusPreemptPolicy{}, one_lane());
  // Equal submit times tie on the key and go by id: the 11 admitted run one at a time, then the
  // twelfth, admitted when the first finished.
  EXPECT_EQ(paged.jobs[11].start_s, 11.0);
  EXPECT_EQ(paged.makespan_s, 12.0);
}

// Paging to host is charged (Salus pages a session's memory out when the GPU's is short,
// ExecutionEngine::doPaging). A 16 GiB GPU, no contexts, a 1 GiB/s host link; A (10 GiB, 3
// iterations) at 0, B (10 GiB, 1 iteration) at 0.5:
//   A 0-1 (its first allocation moves nothing);
//   at 1 the newest, B, runs: A's 10 + B's 10 GiB exceed 16, so 4 GiB of A go out (4 s):
//   B 1-6 (1 + 4);
//   at 6 A brings its 4 GiB back in (4 s): A 6-11 (1 + 4), 11-12.
// Without the charge (an unbounded link): A 0-1, B 1-2, A 2-4.
TEST(PolicySchedule, SalusPreemptPaysForPagingToHost) {
  std::vector<SimJob> jobs{make(0, 0, 3), make(1, 0.5, 1)};
  for (auto& job : jobs) job.memory = MemoryDemand{10 * kGiB, 0, -1};
  auto config = one_lane();
  config.memory.context_bytes = 0;
  config.host_link_bytes_per_s = static_cast<double>(kGiB);
  const auto paged = simulate(jobs, SalusPreemptPolicy{}, config);
  EXPECT_EQ(finishes(paged), (std::vector<double>{12, 6}));
  EXPECT_DOUBLE_EQ(paged.jobs[0].paging_s, 4.0);
  EXPECT_DOUBLE_EQ(paged.jobs[1].paging_s, 4.0);
  config.host_link_bytes_per_s = std::numeric_limits<double>::infinity();
  const auto free_paging = simulate(jobs, SalusPreemptPolicy{}, config);
  EXPECT_EQ(finishes(free_paging), (std::vector<double>{4, 2}));
  EXPECT_EQ(free_paging.jobs[0].paging_s, 0.0);
  // Jobs that fit together move nothing.
  for (auto& job : jobs) job.memory = MemoryDemand{7 * kGiB, 0, -1};
  config.host_link_bytes_per_s = static_cast<double>(kGiB);
  const auto fitting = simulate(jobs, SalusPreemptPolicy{}, config);
  EXPECT_EQ(finishes(fitting), (std::vector<double>{4, 2}));
}

// A job's tail: with a p99 of 2 s on 1 s iterations, iterations 49 and 99 of every 100 take 2 s
// and the other 98 take (100 - 4) / 98 s, so 200 iterations still take 200 s, and the p99 of its
// recorded steps (nearest rank, 198th of 200) is 2 s. Recording is off by default (p99 0).
TEST(PolicySchedule, AJobsTailIsTwoSlowIterationsInAHundred) {
  auto job = make(0, 0, 200);
  job.iteration_p99_s = 2.0;
  auto config = one_lane();
  config.record_step_times = true;
  const auto recorded = simulate({job}, FifoExclusivePolicy{}, config);
  EXPECT_NEAR(recorded.jobs[0].finish_s, 200.0, 1e-9);
  EXPECT_NEAR(recorded.jobs[0].p99_step_s, 2.0, 1e-9);
  EXPECT_EQ(simulate({job}, FifoExclusivePolicy{}, one_lane()).jobs[0].p99_step_s, 0.0);
  job.iteration_p99_s = 0;
  const auto steady = simulate({job}, FifoExclusivePolicy{}, config);
  EXPECT_NEAR(steady.jobs[0].p99_step_s, 1.0, 1e-9);
}

TEST(PolicySchedule, PriorityJobTakesTheNextTurn) {
  // C has priority: A 0-1, B 1-2, C 2-3 (preempts the round robin at the boundary), A 3-4, B 4-5,
  // A 5-7.
  const auto with_c = simulate(three_jobs(0, 1), PriorityPolicy{}, one_lane());
  EXPECT_DOUBLE_EQ(with_c.jobs[2].jct_s, 1.0);
  // A has priority: it is never preempted (A 0-4); then B 4-5, C 5-6 (done), B 6-7.
  const auto with_a = simulate(three_jobs(1, 0), PriorityPolicy{}, one_lane());
  EXPECT_EQ(finishes(with_a), (std::vector<double>{4, 7, 6}));
  EXPECT_EQ(with_a.jobs[0].preemptions, 0);
}

TEST(PolicySchedule, SwitchingJobsCostsTheSwitchTime) {
  // A (2 iterations) and B (1) at t=0, round robin, 0.5 s per switch:
  // A 0-1, switch + B 1-2.5, switch + A 2.5-4.
  auto config = one_lane();
  config.switch_cost_s = 0.5;
  const auto result = simulate({make(0, 0, 2), make(1, 0, 1)}, PackPolicy{}, config);
  EXPECT_EQ(finishes(result), (std::vector<double>{4, 2.5}));
}

TEST(PolicySchedule, FifoHeadOfLineBlocksWhileOthersBackfill) {
  // 2 GPUs. A: 1 GPU, 10 iterations at 0. B: 2 GPUs, 1 iteration at 1. C: 1 GPU, 1 iteration at 2.
  const std::vector<SimJob> jobs{make(0, 0, 10), make(1, 1, 1, 2), make(2, 2, 1)};
  // FIFO: B waits for both GPUs (10-11), C waits behind B (11-12).
  EXPECT_EQ(finishes(simulate(jobs, FifoExclusivePolicy{}, one_lane(2))),
            (std::vector<double>{10, 11, 12}));
  // SRTF backfills C onto the idle GPU at 2 (2-3); B still needs two empty GPUs (10-11).
  EXPECT_EQ(finishes(simulate(jobs, SrtfPolicy{}, one_lane(2))), (std::vector<double>{10, 11, 3}));
}

TEST(PolicySchedule, PackUsesFewerGpusThanSpreading) {
  // Two 1-GPU jobs on a 2-GPU cluster: SRTF spreads them, PACK keeps them on one GPU.
  const std::vector<SimJob> jobs{make(0, 0, 3), make(1, 0, 3)};
  auto config = one_lane(2);
  EXPECT_EQ(simulate(jobs, SrtfPolicy{}, config).gpus_used_peak, 2);
  EXPECT_EQ(simulate(jobs, PackPolicy{}, config).gpus_used_peak, 1);
}

TEST(PolicySchedule, ParallelLanesSlowEachOtherByTheInterferenceModel) {
  // Two compute-bound jobs, each in a lane of its own (free memory allows a new lane, so nobody
  // has to share), alpha = 0.1: with both lanes resident an iteration takes
  // max(1, 2) * (1 + 0.1 * 1) = 2.2 s, the planner's steady-state model.
  auto config = one_lane();
  config.lanes = true;
  config.interference.alpha = 0.1;
  config.gpu_capacity_bytes = 16 * kGiB;
  auto a = make(0, 0, 1);
  auto b = make(1, 0, 1);
  a.memory = b.memory = MemoryDemand{kGiB, 6 * kGiB, 0};
  const auto result = simulate({a, b}, SrtfPolicy{}, config);
  EXPECT_DOUBLE_EQ(result.jobs[0].finish_s, 2.2);
  EXPECT_DOUBLE_EQ(result.jobs[1].finish_s, 2.2);
}

TEST(PolicySchedule, UnknownPolicyNameIsRejected) {
  EXPECT_THROW(make_policy("lottery"), std::invalid_argument);
  for (const auto& name : policy_names()) EXPECT_EQ(make_policy(name)->name(), name);
}

}  // namespace
}  // namespace fleetscope::sharer
