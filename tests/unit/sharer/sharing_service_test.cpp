// The sharing service's decisions: lanes granted, queued and reclaimed; plans applied to restarted
// jobs; a plan withdrawn when the measured slowdown is over its bound; every decision recorded.
#include "fleetscope/sharer/sharing_service.h"

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "fleetscope/sharer/planner.h"
#include "fleetscope/sharer/sharing_restore.h"

namespace fleetscope::sharer {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

class SharingServiceTest : public ::testing::Test {
 protected:
  SharingServiceTest()
      : service_({{0, "GPU-aaaa", 16 * kGiB}, {1, "GPU-bbbb", 16 * kGiB}}, "t",
                 [this](pid_t pid, uint64_t) { return !dead_.count(pid); }) {}

  LaneAsk ask(pid_t pid, const std::string& workflow, int64_t p_gib, int64_t t_gib) {
    LaneAsk a;
    a.pid = pid;
    a.uid = 1000;
    a.workflow = workflow;
    a.persistent_bytes = p_gib * kGiB;
    a.ephemeral_bytes = t_gib * kGiB;
    return a;
  }
  std::vector<std::string> kinds() {
    std::vector<std::string> out;
    for (const auto& r : service_.take_records()) out.push_back(r.kind);
    return out;
  }

  // A plan: workflows a and b in one lane of one GPU, each 4 GiB P + 2 GiB T, 100 ms solo.
  std::string two_job_plan() {
    std::vector<JobProfile> jobs(2);
    for (int i = 0; i < 2; ++i) {
      jobs[i].job_id = std::string(1, static_cast<char>('a' + i)) + "@db/gpu" + std::to_string(i);
      jobs[i].workflow = std::string(1, static_cast<char>('a' + i));
      jobs[i].gpu = "db#capture1/gpu" + std::to_string(i);
      jobs[i].persistent_bytes = 4 * kGiB;
      jobs[i].ephemeral_peak_bytes = 2 * kGiB;
      jobs[i].gpu_capacity_bytes = 16 * kGiB;
      jobs[i].utilization = 0.2;
      jobs[i].iteration_ns = 100'000'000;
    }
    PlannerOptions options;
    options.max_slowdown = 3.0;
    return plan_to_json(plan_consolidation(jobs, options)).dump();
  }

  std::set<pid_t> dead_;
  SharingService service_;
};

TEST_F(SharingServiceTest, GrantsALaneWithItsCapAndRecordsIt) {
  auto ticket = service_.request(ask(100, "train", 4, 2), 1);
  ASSERT_EQ(ticket.state, TicketState::kGranted);
  EXPECT_EQ(ticket.gpu_index, 0);  // best fit: both empty, the first
  EXPECT_EQ(ticket.gpu_uuid, "GPU-aaaa");
  EXPECT_EQ(ticket.lane_name, "t-g0-l0");
  // P + T plus the statistical margin, rounded to 2 MiB.
  EXPECT_GE(ticket.lane_bytes, 6 * kGiB);
  EXPECT_LT(ticket.lane_bytes, 7 * kGiB);
  EXPECT_EQ(ticket.policy, "fifo");
  EXPECT_EQ(kinds(), std::vector<std::string>{"job_admitted"});
  auto changes = service_.take_ledger_changes();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, LedgerChange::Kind::kCreate);
  EXPECT_EQ(changes[0].capacity_bytes, ticket.lane_bytes);
}

TEST_F(SharingServiceTest, QueuesWhenNoGpuHasRoomAndGrantsWhenALaneFrees) {
  ASSERT_EQ(service_.request(ask(1, "big", 10, 4), 1).state, TicketState::kGranted);
  ASSERT_EQ(service_.request(ask(2, "big", 10, 4), 1).state, TicketState::kGranted);
  auto third = service_.request(ask(3, "big", 10, 4), 2);
  EXPECT_EQ(third.state, TicketState::kQueued);
  EXPECT_EQ(service_.queued().size(), 1u);
  // The first job's process exits: its lane is reclaimed and the queued job takes the GPU.
  dead_.insert(1);
  EXPECT_EQ(service_.reap(3), 1);
  auto now = service_.ticket(third.request_id);
  ASSERT_TRUE(now);
  EXPECT_EQ(now->state, TicketState::kGranted);
  EXPECT_EQ(now->gpu_index, 0);
  EXPECT_TRUE(service_.queued().empty());
  EXPECT_EQ(kinds(), (std::vector<std::string>{"job_admitted", "job_admitted", "job_queued",
                                               "job_released", "job_admitted"}));
}

TEST_F(SharingServiceTest, RefusesWhatNoGpuCouldEverHoldAndRequestsWithoutMemory) {
  EXPECT_THROW(service_.request(ask(1, "huge", 20, 1), 1), std::invalid_argument);
  LaneAsk no_memory;
  no_memory.pid = 2;
  no_memory.workflow = "w";
  EXPECT_THROW(service_.request(no_memory, 1), std::invalid_argument);
  ASSERT_EQ(service_.request(ask(3, "w", 1, 1), 1).state, TicketState::kGranted);
  EXPECT_THROW(service_.request(ask(3, "w", 1, 1), 1), std::invalid_argument);  // twice
  LaneAsk hinted = ask(4, "w", 1, 1);
  hinted.gpu_hint = "GPU-nope";
  EXPECT_THROW(service_.request(hinted, 1), std::invalid_argument);
  hinted.gpu_hint = "GPU-bbbb";
  EXPECT_EQ(service_.request(hinted, 1).gpu_index, 1);
}

TEST_F(SharingServiceTest, OffAnswersUnsharedAndKeepsExistingLanesUntilTheyEnd) {
  ASSERT_EQ(service_.request(ask(1, "w", 10, 4), 1).state, TicketState::kGranted);
  ASSERT_EQ(service_.request(ask(2, "w", 10, 4), 1).state, TicketState::kGranted);
  auto queued = service_.request(ask(3, "w", 10, 4), 1);
  ASSERT_EQ(queued.state, TicketState::kQueued);
  service_.off(2);
  EXPECT_EQ(service_.ticket(queued.request_id)->state, TicketState::kUnshared);
  EXPECT_EQ(service_.request(ask(4, "w", 1, 1), 3).state, TicketState::kUnshared);
  EXPECT_EQ(service_.lanes().size(), 2u);  // running jobs keep their lanes
  EXPECT_TRUE(service_.release(1, 4, "test"));
  EXPECT_EQ(service_.lanes().size(), 1u);
}

TEST_F(SharingServiceTest, PlanPutsRestartedJobsOfItsWorkflowsIntoOneLane) {
  ServicePlan plan;
  plan.id = 7;
  plan.placements = parse_plan_placements(two_job_plan(), "plan.json");
  ASSERT_EQ(plan.placements.size(), 2u);
  EXPECT_EQ(plan.placements[0].lane, plan.placements[1].lane) << "the planner shares one lane";
  EXPECT_EQ(plan.placements[0].solo_iteration_ns, 100'000'000);
  service_.apply_plan(plan, 1);
  // The jobs start (or restart) with only their workflow: P and T come from the plan.
  LaneAsk a;
  a.pid = 10;
  a.workflow = "a";
  a.planned_only = true;
  LaneAsk b = a;
  b.pid = 11;
  b.workflow = "b";
  auto ta = service_.request(a, 2);
  auto tb = service_.request(b, 2);
  ASSERT_EQ(ta.state, TicketState::kGranted);
  ASSERT_EQ(tb.state, TicketState::kGranted);
  EXPECT_EQ(ta.lane_name, tb.lane_name);
  EXPECT_EQ(ta.plan_id, 7);
  EXPECT_GE(tb.lane_bytes, 10 * kGiB);  // sum P + max T
  // A workflow the plan does not name stays unshared when it only wants planned lanes.
  LaneAsk other = a;
  other.pid = 12;
  other.workflow = "c";
  EXPECT_EQ(service_.request(other, 2).state, TicketState::kUnshared);
  // Job a restarts: its old process is gone, the new one goes back into the planned lane.
  dead_.insert(10);
  service_.reap(3);
  a.pid = 20;
  auto again = service_.request(a, 4);
  ASSERT_EQ(again.state, TicketState::kGranted);
  EXPECT_EQ(again.lane_name, tb.lane_name);
  auto records = service_.take_records();
  EXPECT_EQ(records.front().kind, "plan_applied");
  EXPECT_EQ(records.front().plan_id, 7);
  auto applied_detail = nlohmann::json::parse(records.front().detail_json);
  EXPECT_EQ(applied_detail["workflows"], nlohmann::json({"a", "b"}));
}

TEST_F(SharingServiceTest, AutomaticModeWithdrawsAPlanWhoseMeasuredSlowdownIsTooHigh) {
  ServicePlan plan;
  plan.id = 3;
  plan.automatic = true;
  plan.max_slowdown = 1.5;
  plan.placements = parse_plan_placements(two_job_plan(), "plan.json");
  service_.apply_plan(plan, 0);
  LaneAsk a;
  a.pid = 10;
  a.workflow = "a";
  ASSERT_EQ(service_.request(a, 0).state, TicketState::kGranted);
  // 120 ms iterations against 100 ms alone: 1.2, within 1.5.
  for (int i = 0; i <= 4; ++i) service_.record_boundary(10, kSecond + i * 120'000'000);
  EXPECT_NEAR(*service_.job_of(10)->measured_slowdown(), 1.2, 1e-9);
  EXPECT_FALSE(service_.check_slowdowns(2 * kSecond));
  ASSERT_NE(service_.active_plan(), nullptr);
  // Then 250 ms iterations: the median of the last 8 goes to 2.5 > 1.5.
  for (int i = 1; i <= 8; ++i)
    service_.record_boundary(10, kSecond + 480'000'000 + i * 250'000'000);
  EXPECT_TRUE(service_.check_slowdowns(4 * kSecond));
  EXPECT_EQ(service_.active_plan(), nullptr);
  EXPECT_FALSE(service_.plans()[0].active);
  EXPECT_NE(service_.plans()[0].withdrawn_reason.find("2.500 > 1.500"), std::string::npos);
  // The running job keeps its lane until it ends; its next start runs unshared.
  EXPECT_EQ(service_.lanes().size(), 1u);
  ASSERT_TRUE(service_.release(10, 5 * kSecond, "exited"));
  a.pid = 11;
  auto restarted = service_.request(a, 6 * kSecond);
  EXPECT_EQ(restarted.state, TicketState::kUnshared);
  EXPECT_NE(restarted.reason.find("withdrawn"), std::string::npos);
  bool withdrawn = false;
  for (const auto& r : service_.take_records()) {
    if (r.kind != "plan_withdrawn") continue;
    withdrawn = true;
    auto fields = nlohmann::json::parse(r.detail_json);
    EXPECT_DOUBLE_EQ(fields["measured_slowdown"].get<double>(), 2.5);
    EXPECT_EQ(r.plan_id, 3);
  }
  EXPECT_TRUE(withdrawn);
}

TEST_F(SharingServiceTest, AppliedPlanSupersedesTheActiveOne) {
  ServicePlan first;
  first.id = 1;
  first.placements = parse_plan_placements(two_job_plan(), "p");
  ServicePlan second = first;
  second.id = 2;
  EXPECT_FALSE(service_.apply_plan(first, 0));
  EXPECT_EQ(service_.apply_plan(second, 1), 1);
  EXPECT_FALSE(service_.plans()[0].active);
  EXPECT_TRUE(service_.plans()[1].active);
}

TEST(SharingPlanParsing, NamesTheFileAndWhatWasExpected) {
  try {
    parse_plan_placements("{\"gpus\": 3}", "bad.json");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("'gpus' and 'jobs'"), std::string::npos);
  }
  EXPECT_THROW(parse_plan_placements("{nope", "x.json"), std::runtime_error);
  const char* missing_lane =
      R"({"gpus": [{"gpu": "g", "lanes": []}], "jobs": [{"workflow": "w", "to_gpu": "g", "lane_id": 4}]})";
  try {
    parse_plan_placements(missing_lane, "m.json");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("m.json: jobs[0]: lane 4"), std::string::npos);
  }
}

// A restarted daemon replays its records into a new service (sharing_restore.h).
class SharingResumeTest : public SharingServiceTest {
 protected:
  // The state-changing records the service wrote so far (what the daemon reads back).
  void keep_records() {
    for (auto& r : service_.take_records()) history_.push_back(std::move(r));
  }
  // A fresh service (a new daemon run) resumed from the history; its records kept apart.
  std::unique_ptr<SharingService> restarted() {
    auto fresh =
        std::make_unique<SharingService>(std::vector<ServiceGpu>{{0, "GPU-aaaa", 16 * kGiB}}, "r",
                                         [](pid_t, uint64_t) { return true; });
    const auto state = replay_sharing_records(history_);
    std::optional<ServicePlan> plan;
    if (state.active_plan_id)
      plan = resumed_plan(*state.active_plan_id, 5, "srtf", two_job_plan(), state, "row");
    fresh->resume(state.enabled, state.automatic, state.max_slowdown, state.withdrawn_workflows,
                  std::move(plan), 100);
    return fresh;
  }
  ServicePlan plan(int64_t id, bool automatic, double bound) {
    ServicePlan p;
    p.id = id;
    p.automatic = automatic;
    p.max_slowdown = bound;
    p.placements = parse_plan_placements(two_job_plan(), "plan.json");
    return p;
  }
  LaneAsk planned(pid_t pid, const std::string& workflow) {
    LaneAsk a;
    a.pid = pid;
    a.workflow = workflow;
    a.planned_only = true;
    return a;
  }
  std::vector<SharingRecord> history_;
};

TEST_F(SharingResumeTest, TheActivePlanAndAutomaticModeComeBack) {
  service_.apply_plan(plan(3, false, 0), 1);
  service_.apply_plan(plan(4, true, 2.5), 2);  // supersedes 3
  service_.set_automatic(false, 0, 3);
  service_.set_automatic(true, 1.7, 4);
  keep_records();
  auto fresh = restarted();
  ASSERT_NE(fresh->active_plan(), nullptr);
  EXPECT_EQ(fresh->active_plan()->id, 4);
  EXPECT_EQ(fresh->active_plan()->policy, "srtf");
  EXPECT_TRUE(fresh->automatic());
  EXPECT_DOUBLE_EQ(fresh->max_slowdown(), 1.7);
  auto records = fresh->take_records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].kind, "plan_restored");
  EXPECT_EQ(records[0].plan_id, 4);
  // A planned job started after the restart gets the plan's lane.
  auto ticket = fresh->request(planned(30, "b"), 101);
  ASSERT_EQ(ticket.state, TicketState::kGranted) << ticket.reason;
  EXPECT_EQ(ticket.plan_id, 4);
  EXPECT_GE(ticket.lane_bytes, 10 * kGiB);
  // A second restart replays plan_restored as it did plan_applied.
  history_.push_back(records[0]);
  EXPECT_EQ(replay_sharing_records(history_).active_plan_id, 4);
}

TEST_F(SharingResumeTest, AWithdrawnPlanOrSharingOffIsNotRestored) {
  service_.apply_plan(plan(5, true, 1.5), 1);
  ASSERT_EQ(service_.request(planned(10, "a"), 1).state, TicketState::kGranted);
  for (int i = 0; i <= 4; ++i) service_.record_boundary(10, kSecond + i * 300'000'000);
  ASSERT_TRUE(service_.check_slowdowns(3 * kSecond));  // 300 ms against 100 ms solo
  keep_records();
  auto fresh = restarted();
  EXPECT_EQ(fresh->active_plan(), nullptr);
  EXPECT_TRUE(fresh->take_records().empty());
  // The withdrawn plan's workflows stay unshared, as they were before the restart.
  auto ticket = fresh->request(planned(31, "b"), 101);
  EXPECT_EQ(ticket.state, TicketState::kUnshared);
  EXPECT_NE(ticket.reason.find("withdrawn"), std::string::npos) << ticket.reason;

  service_.apply_plan(plan(6, false, 0), 4);
  service_.off(5);
  keep_records();
  const auto off = replay_sharing_records(history_);
  EXPECT_FALSE(off.enabled);
  EXPECT_FALSE(off.active_plan_id);
  EXPECT_TRUE(off.withdrawn_workflows.empty()) << "plan 6 named them again";
  EXPECT_FALSE(restarted()->enabled());
}

}  // namespace
}  // namespace fleetscope::sharer
