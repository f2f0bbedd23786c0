// The lanes' turn policy as a planner input (issue 22, safe sharing): fifo, srtf and priority
// order a shared lane's members as the arbiter does (lanes/turn_policy.h), the planner bounds each
// member's wait by that order (sharer/turn_model.h), the plan changes with it, and the simulator,
// running the same orders, stays within the bounds and near the estimates.

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "fleetscope/sharer/planner.h"
#include "fleetscope/sharer/turn_model.h"

namespace fleetscope::sharer {
namespace {

JobProfile job(const std::string& id, double util, double iteration_ms,
               std::map<std::string, std::string> labels = {}) {
  JobProfile profile;
  profile.job_id = id;
  profile.workflow = id;
  profile.gpu = "gpu-" + id;
  profile.persistent_bytes = kGiB;
  profile.ephemeral_peak_bytes = kGiB;
  profile.gpu_capacity_bytes = 80 * kGiB;
  profile.utilization = util;
  profile.iteration_ns = static_cast<int64_t>(iteration_ms * 1e6);
  profile.labels = std::move(labels);
  return profile;
}

const PlannedJob& find(const ConsolidationPlan& plan, const std::string& id) {
  for (const auto& planned : plan.jobs) {
    if (planned.job_id == id) return planned;
  }
  throw std::runtime_error("no job " + id);
}

TEST(TurnModel, NamesAreTheArbitersAndFifoIsTheRoundRobinBound) {
  EXPECT_EQ(turn_order_names(), (std::vector<std::string>{"fifo", "srtf", "priority"}));
  for (const auto& name : turn_order_names()) {
    ASSERT_TRUE(turn_order_named(name)) << name;
    EXPECT_EQ(turn_order_name(*turn_order_named(name)), name);
  }
  EXPECT_FALSE(turn_order_named("fair"));
  EXPECT_FALSE(turn_order_named(""));
  // fifo: every member alternates with every other: contended_time_sharing itself.
  const std::vector<LaneMember> lane{{0.5, 1.0}, {0.3, 1.0}, {0.3, 2.0}};
  const std::vector<TurnRank> fifo(3);
  for (size_t i = 0; i < lane.size(); ++i) {
    for (double parallel : {1.0, 1.4}) {
      for (bool estimate : {false, true}) {
        EXPECT_EQ(ordered_time_sharing(lane, fifo, i, parallel, estimate),
                  contended_time_sharing(lane, i, parallel, estimate));
      }
    }
  }
}

// Hand-computed busy periods. A: priority 2, u 0.5, 0.6 s steps (GPU phase 0.3 s); B and C:
// priority 0, u 0.3, 1 s steps (0.3 s). fifo: A waits 0.6 (1 + 0.6 / 0.6 = 2.0), B and C wait
// 0.6 (1.6). priority: A waits at most one GPU phase of B or C already started (0.3:
// (0.6 + 0.3) / 0.6 = 1.5); B waits for C once and for A again and again:
// w = 0.3 + (floor(w / 0.6) + 1) 0.3 -> 0.6 -> 0.9 -> 0.9, so (1 + 0.9) / 1 = 1.9 > 1.6.
TEST(TurnModel, PriorityShortensTheTopJobsWaitAndLengthensTheOthers) {
  const std::vector<LaneMember> lane{{0.5, 0.6}, {0.3, 1.0}, {0.3, 1.0}};
  std::vector<JobProfile> jobs{job("a", 0.5, 600, {{"priority", "2"}}), job("b", 0.3, 1000),
                               job("c", 0.3, 1000)};
  std::vector<TurnRank> priority, fifo;
  for (const auto& j : jobs) {
    priority.push_back(turn_rank(j, TurnOrder::kPriority, j.iteration_ns * 1e-9));
    fifo.push_back(turn_rank(j, TurnOrder::kFifo, j.iteration_ns * 1e-9));
  }
  EXPECT_NEAR(ordered_time_sharing(lane, fifo, 0, 1.0, false), 2.0, 1e-12);
  EXPECT_NEAR(ordered_time_sharing(lane, fifo, 1, 1.0, false), 1.6, 1e-12);
  EXPECT_NEAR(ordered_time_sharing(lane, priority, 0, 1.0, false), 1.5, 1e-12);
  EXPECT_NEAR(ordered_time_sharing(lane, priority, 1, 1.0, false), 1.9, 1e-12);
  EXPECT_NEAR(ordered_time_sharing(lane, priority, 2, 1.0, false), 1.9, 1e-12);
  // srtf: by steps x iteration time. C has the least remaining (10 x 1 s), then A (100 x 0.6 s);
  // B has no steps label: unknown, last. C waits only for a started GPU phase (0.3: 1.3); A for
  // C (again and again, but C's 1 s steps come once in A's wait) and one started phase of B:
  // w = 0.3 + (floor(w / 1) + 1) 0.3 = 0.6: (0.6 + 0.6) / 0.6 = 2.0; B for the busy period of A
  // and C: w = (floor(w / 0.6) + 1) 0.3 + (floor(w) + 1) 0.3 -> 0.6 -> 0.9 -> 0.9: 1.9.
  jobs[0].labels = {{"steps", "100"}};
  jobs[2].labels = {{"steps", "10"}};
  std::vector<TurnRank> srtf;
  for (const auto& j : jobs) srtf.push_back(turn_rank(j, TurnOrder::kSrtf, j.iteration_ns * 1e-9));
  EXPECT_NEAR(ordered_time_sharing(lane, srtf, 2, 1.0, false), 1.3, 1e-12);
  EXPECT_NEAR(ordered_time_sharing(lane, srtf, 0, 1.0, false), 2.0, 1e-12);
  EXPECT_NEAR(ordered_time_sharing(lane, srtf, 1, 1.0, false), 1.9, 1e-12);
  // Members that go first and fill the lane starve the rest: no finite bound.
  const std::vector<LaneMember> full{{0.6, 1.0}, {0.5, 1.0}, {0.2, 1.0}};
  const std::vector<TurnRank> ranks{{-2, true}, {-1, true}, {0, true}};
  EXPECT_TRUE(std::isinf(ordered_time_sharing(full, ranks, 2, 1.0, false)));
  EXPECT_TRUE(std::isfinite(ordered_time_sharing(full, ranks, 1, 1.0, false)));
}

TEST(TurnModel, LabelsGiveThePriorityAndTheRemainingTime) {
  EXPECT_EQ(turn_priority(job("a", 0.2, 10, {{"priority", "7"}})), 7);
  EXPECT_EQ(turn_priority(job("a", 0.2, 10, {{"priority", "-3"}})), -3);
  EXPECT_EQ(turn_priority(job("a", 0.2, 10, {{"priority", "high"}})), 0);  // as the arbiter's 0
  EXPECT_EQ(turn_priority(job("a", 0.2, 10)), 0);
  EXPECT_EQ(turn_steps(job("a", 0.2, 10, {{"steps", "500"}})), 500.0);
  EXPECT_FALSE(turn_steps(job("a", 0.2, 10, {{"steps", "0"}})));
  EXPECT_FALSE(turn_steps(job("a", 0.2, 10, {{"steps", "many"}})));
  const auto known = turn_rank(job("a", 0.2, 10, {{"steps", "500"}}), TurnOrder::kSrtf, 0.01);
  EXPECT_DOUBLE_EQ(known.key, 5.0);
  EXPECT_FALSE(known.round_robin_ties);  // the one that ran has less left: it keeps the turn
  const auto unknown = turn_rank(job("b", 0.2, 10), TurnOrder::kSrtf, 0.01);
  EXPECT_TRUE(std::isinf(unknown.key));
  EXPECT_TRUE(unknown.round_robin_ties);  // ties by arrival at the arbiter
}

// Three jobs in Salus's single-lane mode (one lane per GPU, every job time-slices it). A is
// latency-bound (priority 2, a p99 target, so it may share) and may slow at most 1.45x; B and C
// are batch jobs that accept 2x. fifo: with B in its lane A waits for B's GPU phase (1.3), with B
// and C for both (1.6 > 1.45): C needs a GPU of its own, 3 -> 2 GPUs. priority: A waits for at
// most one started GPU phase (1.3) however many batch jobs share its lane, B and C wait for A and
// each other (1.6 <= 2): 3 -> 1 GPU. The same jobs under srtf without steps labels alternate, as
// under fifo.
TEST(TurnPolicyPlanner, PriorityLetsAHighPriorityJobShareWhereFifoBreaksItsBound) {
  std::vector<JobProfile> jobs{
      job("a", 0.3, 100, {{"priority", "2"}, {"p99_target_ms", "1000"}, {"max_slowdown", "1.45"}}),
      job("b", 0.3, 100, {{"max_slowdown", "2"}}), job("c", 0.3, 100, {{"max_slowdown", "2"}})};
  PlannerOptions options;
  options.single_lane = true;
  const auto fifo = plan_consolidation(jobs, options);
  EXPECT_EQ(fifo.gpus_after, 2);
  EXPECT_LE(find(fifo, "a").worst_case_slowdown, 1.45 + 1e-9);
  options.turn_order = TurnOrder::kPriority;
  const auto priority = plan_consolidation(jobs, options);
  EXPECT_EQ(priority.turn_order, TurnOrder::kPriority);
  ASSERT_EQ(priority.gpus_after, 1);
  EXPECT_NEAR(find(priority, "a").worst_case_slowdown, 1.3, 1e-9);
  EXPECT_NEAR(find(priority, "b").worst_case_slowdown, 1.6, 1e-9);
  EXPECT_NEAR(find(priority, "c").worst_case_slowdown, 1.6, 1e-9);
  // The plan says which policy it assumes; a fifo plan is as it always was (no such key).
  const auto document = plan_to_json(priority);
  EXPECT_EQ(document.at("turn_policy"), "priority");
  EXPECT_EQ(plan_turn_order(document, "plan.json"), TurnOrder::kPriority);
  EXPECT_FALSE(plan_to_json(fifo).contains("turn_policy"));
  EXPECT_EQ(plan_turn_order(plan_to_json(fifo), "plan.json"), TurnOrder::kFifo);
  options.turn_order = TurnOrder::kSrtf;
  const auto srtf = plan_consolidation(jobs, options);
  EXPECT_EQ(srtf.gpus_after, fifo.gpus_after);
  EXPECT_EQ(plan_to_json(srtf).at("jobs"), plan_to_json(fifo).at("jobs"));
}

TEST(TurnPolicyPlanner, APlanWithAnUnknownTurnPolicyIsRefusedByName) {
  nlohmann::json document{{"gpus", nlohmann::json::array()}, {"turn_policy", "fair"}};
  try {
    plan_turn_order(document, "old-plan.json");
    FAIL() << "accepted turn_policy fair";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("old-plan.json: turn_policy \"fair\""),
              std::string::npos)
        << error.what();
  }
  document["turn_policy"] = 3;
  EXPECT_THROW(plan_turn_order(document, "p.json"), std::runtime_error);
}

// The analytic model against the simulator, for every policy: one lane of four jobs (single-lane
// mode, bounds loose enough that all share one GPU; together they keep it 90 % busy), with
// priorities and steps that order them. Replayed under the same policy (the simulator's pack,
// srtf and priority turns, replay_plan), every job's simulated slowdown stays within its
// worst-case bound; the policy moves the simulated slowdowns the way the model says (the job it
// puts first waits less than under fifo, the one it puts last more); and the estimates are no
// further from the simulator than the round-robin estimate the planner has always reported
// (fifo's, on the same lane: at most 42 % here, its job a predicted 2.275 and simulated 1.320).
TEST(TurnPolicyPlanner, TheSimulatorStaysWithinEachPolicysBoundsAndMovesAsItsModelSays) {
  // A priority label marks a job latency-sensitive: with a p99 target it may share a lane.
  const std::string target = "100000";
  std::vector<JobProfile> jobs{
      job("a", 0.35, 40, {{"priority", "3"}, {"steps", "20000"}, {"p99_target_ms", target}}),
      job("b", 0.25, 100, {{"priority", "1"}, {"steps", "5000"}, {"p99_target_ms", target}}),
      job("c", 0.2, 70, {{"priority", "1"}, {"p99_target_ms", target}}),
      job("d", 0.1, 250, {{"steps", "100000"}})};
  PlannerOptions options;
  options.single_lane = true;
  options.max_slowdown = 20;
  std::map<TurnOrder, std::map<std::string, double>> simulated;
  std::map<TurnOrder, double> estimate_error;
  for (TurnOrder order : {TurnOrder::kFifo, TurnOrder::kSrtf, TurnOrder::kPriority}) {
    options.turn_order = order;
    const auto plan = plan_consolidation(jobs, options);
    ASSERT_EQ(plan.gpus_after, 1) << turn_order_name(order);
    const auto replay = replay_plan(jobs, plan, options);
    ASSERT_EQ(replay.size(), jobs.size());
    for (const auto& row : replay) {
      const auto& planned = find(plan, row.job_id);
      EXPECT_LE(row.simulated_slowdown, planned.worst_case_slowdown * (1 + 1e-6))
          << turn_order_name(order) << " " << row.job_id;
      EXPECT_EQ(row.predicted_slowdown, planned.predicted_slowdown);
      simulated[order][row.job_id] = row.simulated_slowdown;
      estimate_error[order] = std::max(
          estimate_error[order], std::abs(row.simulated_slowdown / row.predicted_slowdown - 1));
    }
  }
  // priority: a (3) first, d (0) last. srtf: b (5000 x 0.1 s = 500 s left) first, c (no steps)
  // last.
  EXPECT_LT(simulated[TurnOrder::kPriority]["a"], simulated[TurnOrder::kFifo]["a"]);
  EXPECT_GT(simulated[TurnOrder::kPriority]["d"], simulated[TurnOrder::kFifo]["d"]);
  EXPECT_LT(simulated[TurnOrder::kSrtf]["b"], simulated[TurnOrder::kFifo]["b"]);
  EXPECT_GT(simulated[TurnOrder::kSrtf]["c"], simulated[TurnOrder::kFifo]["c"]);
  EXPECT_LE(estimate_error[TurnOrder::kSrtf], estimate_error[TurnOrder::kFifo]);
  EXPECT_LE(estimate_error[TurnOrder::kPriority], estimate_error[TurnOrder::kFifo]);
  EXPECT_LT(estimate_error[TurnOrder::kFifo], 0.5);
}

}  // namespace
}  // namespace fleetscope::sharer
