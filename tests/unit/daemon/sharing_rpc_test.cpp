// RpcHandler's sharing calls driven directly (no sockets): per-user rules, lanes granted to real
// processes (this test's), the ledger the daemon creates, and the rows written to the host store.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <vector>

#include "fleetscope/daemon/daemon_core.h"
#include "fleetscope/daemon/rpc_handler.h"
#include "fleetscope/lanes/lane_segment.h"
#include "fleetscope/store/database.h"
#include "temp_dir.h"

namespace fleetscope::daemon {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;
// A uid that is neither root nor this test's.
const uid_t kStranger = ::geteuid() == 4242 ? 4243 : 4242;

struct SharingRpc : ::testing::Test {
  test_support::TempDir dir;
  std::ostringstream log;
  int64_t now = 1'700'000'000'000'000'000;
  std::unique_ptr<DaemonCore> core;

  void SetUp() override {
    ::setenv("FLEETSCOPE_NVML_STANDIN_DEVICES", "1", 1);
    DaemonConfig config;
    config.database = dir.file("host.db");
    config.nvml_library = NVML_STANDIN;
    core = std::make_unique<DaemonCore>(config, log, [this] { return now; });
    core->sharing().set_ledger_directory(dir.path().string());
  }
  RpcHandler owner() { return RpcHandler(*core, Caller{::getpid(), ::geteuid()}); }
  RpcHandler stranger() { return RpcHandler(*core, Caller{1, kStranger}); }
  static rpc::LaneRequest lane_request(int64_t p, int64_t t) {
    rpc::LaneRequest request;
    request.pid = 0;  // the caller
    request.workflow = "train";
    request.__set_persistent_bytes(p);
    request.__set_ephemeral_bytes(t);
    return request;
  }
  int64_t count(const std::string& table) {
    core->store().flush();
    auto db = store::Database::open(dir.file("host.db"));
    auto s = db.prepare("SELECT count(*) FROM " + table);
    s.step();
    return s.column_int(0);
  }
};

TEST_F(SharingRpc, AJobGetsALaneWithALedgerAndStatusShowsItOnlyToItsOwner) {
  auto api = owner();
  auto grant = api.request_lane(lane_request(2 * kGiB, kGiB));
  ASSERT_EQ(grant.state, rpc::LaneState::GRANTED) << grant.reason;
  EXPECT_EQ(grant.gpu_uuid, "GPU-5eed0000-0000-0000-0000-000000000000");
  EXPECT_GE(grant.lane_bytes, 3 * kGiB);
  EXPECT_EQ(grant.ledger_directory, dir.path().string());
  // The daemon created the ledger with the lane's capacity: the job's own value cannot raise it.
  std::string error;
  auto ledger = lanes::LaneSegment::open_existing(
      lanes::LaneSegment::path_for_lane(dir.path().string(), grant.lane_id), &error);
  ASSERT_TRUE(ledger) << error;
  EXPECT_EQ(ledger->capacity(), static_cast<uint64_t>(grant.lane_bytes));

  auto mine = api.share_status();
  ASSERT_EQ(mine.lanes.size(), 1u);
  ASSERT_EQ(mine.lanes[0].jobs.size(), 1u);
  EXPECT_EQ(mine.lanes[0].jobs[0].pid, ::getpid());
  auto theirs = stranger().share_status();
  ASSERT_EQ(theirs.lanes.size(), 1u);  // the lane and its size are the host's
  EXPECT_TRUE(theirs.lanes[0].jobs.empty()) << "whose job is in it is not";
  // Nor which job was admitted: the event names its pid, uid and workflow.
  ASSERT_FALSE(mine.events.empty());
  EXPECT_NE(mine.events.back().detail_json.find(std::to_string(::getpid())), std::string::npos);
  for (const auto& event : theirs.events)
    EXPECT_EQ(event.detail_json.find(std::to_string(::getpid())), std::string::npos)
        << event.kind << " " << event.detail_json;

  // Twice for the same process is refused; another user may not release it.
  EXPECT_THROW(api.request_lane(lane_request(kGiB, kGiB)), rpc::InvalidRequest);
  EXPECT_THROW(stranger().release_lane(::getpid()), rpc::PermissionDenied);
  api.release_lane(::getpid());
  EXPECT_TRUE(api.share_status().lanes.empty());
  EXPECT_FALSE(std::filesystem::exists(
      lanes::LaneSegment::path_for_lane(dir.path().string(), grant.lane_id)));
  EXPECT_THROW(api.release_lane(::getpid()), rpc::NotFound);
  EXPECT_EQ(count("sharing_events"), 2);  // job_admitted, job_released
}

// single_lane_per_gpu = 1: two jobs placed without a plan time-slice one lane (Salus's mode);
// by default the second gets a lane of its own beside the first.
TEST_F(SharingRpc, SingleLanePerGpuPutsUnplannedJobsInOneLane) {
  int hold[2];
  ASSERT_EQ(::pipe(hold), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // a second job of this user: waits until the test closes the pipe
    ::close(hold[1]);
    char byte;
    (void)!::read(hold[0], &byte, 1);
    ::_exit(0);
  }
  ::close(hold[0]);
  auto lanes_of_two = [&](bool single_lane) {
    core.reset();
    DaemonConfig config;
    config.database = dir.file(single_lane ? "single.db" : "lanes.db");
    config.nvml_library = NVML_STANDIN;
    config.single_lane_per_gpu = single_lane ? 1 : 0;
    core = std::make_unique<DaemonCore>(config, log, [this] { return now; });
    core->sharing().set_ledger_directory(dir.path().string());
    auto api = owner();
    auto first = api.request_lane(lane_request(2 * kGiB, kGiB));
    rpc::LaneRequest second_request = lane_request(2 * kGiB, kGiB);
    second_request.pid = child;
    auto second = api.request_lane(second_request);
    EXPECT_EQ(first.state, rpc::LaneState::GRANTED) << first.reason;
    EXPECT_EQ(second.state, rpc::LaneState::GRANTED) << second.reason;
    api.release_lane(::getpid());
    api.release_lane(child);
    return std::set<std::string>{first.lane_id, second.lane_id}.size();
  };
  EXPECT_EQ(lanes_of_two(true), 1u);
  EXPECT_EQ(lanes_of_two(false), 2u);
  ::close(hold[1]);
  ::waitpid(child, nullptr, 0);
  EXPECT_NE(log.str().find("one lane per GPU for unplanned jobs"), std::string::npos) << log.str();
}

TEST_F(SharingRpc, NobodyAsksALaneForAnotherUsersProcess) {
  rpc::LaneRequest request = lane_request(kGiB, kGiB);
  request.pid = ::getpid();
  try {
    stranger().request_lane(request);
    FAIL() << "a lane for another user's process was granted";
  } catch (const rpc::PermissionDenied& e) {
    EXPECT_NE(e.message.find("belongs to uid"), std::string::npos) << e.message;
  }
  request.pid = 0x3ffffff0;  // no such process
  EXPECT_THROW(owner().request_lane(request), rpc::InvalidRequest);
}

TEST_F(SharingRpc, PlansSharingOffAndAutomaticModeNeedRoot) {
  rpc::ApplyPlanRequest plan;
  plan.plan_json = R"({"gpus": [], "jobs": []})";
  EXPECT_THROW(stranger().apply_plan(plan), rpc::PermissionDenied);
  EXPECT_THROW(stranger().sharing_off(), rpc::PermissionDenied);
  EXPECT_THROW(stranger().set_automatic(true, 1.5), rpc::PermissionDenied);
  EXPECT_EQ(count("lane_plans"), 0);
}

TEST_F(SharingRpc, APlanIsStoredInLanePlansAndBadPlansAreRefusedClearly) {
  auto api = owner();
  rpc::ApplyPlanRequest bad;
  bad.plan_json = "{\"gpus\": [";
  try {
    api.apply_plan(bad);
    FAIL();
  } catch (const rpc::InvalidRequest& e) {
    EXPECT_NE(e.message.find("not JSON (byte"), std::string::npos) << e.message;
  }
  rpc::ApplyPlanRequest plan;
  plan.plan_json =
      R"({"gpus": [{"gpu": "gpu0", "lanes": [{"lane_id": 0, "capacity_bytes": 12884901888}]}],
    "jobs": [{"job_id": "a", "workflow": "wa", "to_gpu": "gpu0", "lane_id": 0,
              "persistent_bytes": 4294967296, "ephemeral_peak_bytes": 2147483648,
              "solo_iteration_ns": 10000000},
             {"job_id": "b", "workflow": "wb", "to_gpu": "gpu0", "lane_id": 0,
              "persistent_bytes": 4294967296, "ephemeral_peak_bytes": 2147483648}]})";
  plan.__set_automatic(true);
  plan.__set_max_slowdown(1.5);
  auto applied = api.apply_plan(plan);
  EXPECT_EQ(applied.workflows, (std::vector<std::string>{"wa", "wb"}));
  EXPECT_EQ(count("lane_plans"), 1);
  auto status = api.share_status();
  ASSERT_EQ(status.plans.size(), 1u);
  EXPECT_TRUE(status.plans[0].active);
  EXPECT_TRUE(status.automatic);
  // The planned workflow's job needs no memory figures: the plan has them.
  rpc::LaneRequest request;
  request.pid = 0;
  request.workflow = "wa";
  request.__set_planned_only(true);
  auto grant = api.request_lane(request);
  ASSERT_EQ(grant.state, rpc::LaneState::GRANTED) << grant.reason;
  EXPECT_EQ(grant.plan_id, applied.plan_id);
  EXPECT_EQ(grant.lane_bytes, 12884901888);
  api.sharing_off();
  EXPECT_FALSE(api.share_status().plans[0].active);
  EXPECT_THROW(api.await_lane(987654, 0), rpc::NotFound);
  EXPECT_THROW(api.set_automatic(true, 0.5), rpc::InvalidRequest);
}

// A plan made for a turn policy (share plan --policy) runs its lanes by that policy: a request
// without one takes the plan's, a request naming another is refused before anything is stored.
TEST_F(SharingRpc, APlanKeepsTheTurnPolicyItWasMadeFor) {
  auto api = owner();
  rpc::ApplyPlanRequest plan;
  plan.plan_json =
      R"({"turn_policy": "priority",
    "gpus": [{"gpu": "gpu0", "lanes": [{"lane_id": 0, "capacity_bytes": 12884901888}]}],
    "jobs": [{"job_id": "a", "workflow": "wa", "to_gpu": "gpu0", "lane_id": 0,
              "persistent_bytes": 4294967296, "ephemeral_peak_bytes": 2147483648}]})";
  plan.__set_policy("fifo");
  try {
    api.apply_plan(plan);
    FAIL() << "a priority plan was applied with fifo turns";
  } catch (const rpc::InvalidRequest& e) {
    EXPECT_NE(e.message.find("was planned for turn policy priority"), std::string::npos)
        << e.message;
  }
  EXPECT_EQ(count("lane_plans"), 0);
  plan.__isset.policy = false;
  api.apply_plan(plan);
  auto status = api.share_status();
  ASSERT_EQ(status.plans.size(), 1u);
  EXPECT_EQ(status.plans[0].policy, "priority");
  // A plan without turn_policy is a fifo plan.
  rpc::ApplyPlanRequest fifo = plan;
  fifo.plan_json.replace(fifo.plan_json.find(R"("turn_policy": "priority",)"),
                         std::string(R"("turn_policy": "priority",)").size(), "");
  fifo.__set_policy("srtf");
  EXPECT_THROW(api.apply_plan(fifo), rpc::InvalidRequest);
}

TEST(SharingRecords, RoundTripThroughTheSharingEventsTable) {
  // The sharing service's records become sharing_events rows and come back the same (the resume
  // path reads them), through the one pair of mapping functions.
  const std::vector<sharer::SharingRecord> records{
      {11, 4, "plan_applied", R"({"policy": "srtf"})"},
      {12, std::nullopt, "sharing_off", "{}"},
  };
  test_support::TempDir dir;
  HostStore store(dir.file("host.db"), "node-1");
  std::vector<HostStore::SharingEventRow> rows;
  for (const auto& record : records) rows.push_back(sharing_event_row(record));
  store.add_sharing_events(rows);
  const auto stored = store.sharing_events(10);
  ASSERT_EQ(stored.size(), records.size());
  std::vector<sharer::SharingRecord> back;
  for (const auto& row : stored) back.push_back(sharing_record(row));
  std::sort(back.begin(), back.end(), [](auto& a, auto& b) { return a.ts_ns < b.ts_ns; });
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(back[i].ts_ns, records[i].ts_ns) << i;
    EXPECT_EQ(back[i].plan_id, records[i].plan_id) << i;
    EXPECT_EQ(back[i].kind, records[i].kind) << i;
    EXPECT_EQ(back[i].detail_json, records[i].detail_json) << i;
  }
}

}  // namespace
}  // namespace fleetscope::daemon
