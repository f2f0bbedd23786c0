// What does not wait for what in the daemon (docs/daemon.md, "Off the bulk path: locks and I/O"):
// a workflow owner lookup does not wait for a metrics transaction on the maintenance connection,
// and the sampling ticks go on while a retention run is in progress on its own thread. Each test
// holds the slow side at a seam until the fast side has been shown to return (events, no sleeps;
// a deadline only turns a regression into a failure instead of a hang).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>

#include "fleetscope/daemon/daemon_core.h"
#include "fleetscope/daemon/host_store.h"
#include "fleetscope/store/database.h"
#include "temp_dir.h"

namespace fleetscope::daemon {
namespace {

using namespace std::chrono_literals;

// Holds the first caller of the seam until release() (later callers pass through).
struct Hold {
  std::atomic<bool> held{false};
  std::promise<void> entered_promise, release_promise;
  std::future<void> entered = entered_promise.get_future();
  std::shared_future<void> released = release_promise.get_future().share();

  void operator()() {
    if (held.exchange(true)) return;
    entered_promise.set_value();
    released.wait();
  }
  void release() { release_promise.set_value(); }
};

TEST(HostStoreLocks, OwnerLookupsDoNotWaitForAMetricsTransaction) {
  test_support::TempDir dir;
  HostStore store(dir.file("host.db"), "node-1");
  EXPECT_EQ(store.claim_workflow("train", 1000, 1), 1000u);
  store.workflow_id("train", std::nullopt);

  Hold hold;
  store.set_maintenance_probe([&] { hold(); });
  WorkflowMetricRow row{"train",
                        {.deviceId = 3,
                         .window_start = 10,
                         .window_end = 20,
                         .metric = "memory_peak_bytes",
                         .value = 4096}};
  std::thread metrics([&] { store.add_workflow_metrics({row}); });
  ASSERT_EQ(hold.entered.wait_for(60s), std::future_status::ready);
  // The metrics write holds the maintenance connection now. What the window-opening path asks:
  auto lookups = std::async(std::launch::async, [&] {
    const auto owner = store.workflow_owner("train");
    const uid_t claimed = store.claim_workflow("train", 2000, 2);  // known: no row written
    store.remember_workflow_labels("train", {"slurm_job_id=7"});
    const int64_t id = store.workflow_id("train", std::nullopt);
    return std::tuple{owner, claimed, id};
  });
  const auto status = lookups.wait_for(60s);
  hold.release();
  metrics.join();
  ASSERT_EQ(status, std::future_status::ready)
      << "a workflow lookup waited for the metrics transaction";
  const auto [owner, claimed, id] = lookups.get();
  EXPECT_EQ(owner, std::optional<uid_t>(1000));
  EXPECT_EQ(claimed, 1000u);
  EXPECT_EQ(id, store.find_workflow("train"));

  // The row went in through the table's generated insert and comes back whole.
  const auto rows = store.workflow_metrics("train", std::nullopt, 10);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].workflow, "train");
  EXPECT_EQ(rows[0].row.workflow_id, id);
  EXPECT_EQ(rows[0].row.deviceId, 3);
  EXPECT_EQ(rows[0].row.window_start, 10);
  EXPECT_EQ(rows[0].row.window_end, 20);
  EXPECT_EQ(rows[0].row.metric, "memory_peak_bytes");
  EXPECT_DOUBLE_EQ(rows[0].row.value, 4096);
}

TEST(HostStoreLocks, ANewClaimKeepsTheFirstClaimantOfTheTable) {
  test_support::TempDir dir;
  {
    HostStore store(dir.file("host.db"), "node-1");
    EXPECT_EQ(store.claim_workflow("eval", 1000, 1), 1000u);
    EXPECT_EQ(store.claim_workflow("eval", 2000, 2), 1000u);
  }
  HostStore reopened(dir.file("host.db"), "node-1");
  EXPECT_EQ(reopened.workflow_owner("eval"), std::optional<uid_t>(1000));
  EXPECT_EQ(reopened.claim_workflow("eval", 2000, 3), 1000u);
}

TEST(HostStoreLocks, SharingRecordsRoundTripThroughTheGeneratedRows) {
  test_support::TempDir dir;
  HostStore store(dir.file("host.db"), "node-1");
  const int64_t plan = store.add_lane_plan(5, "srtf", R"({"gpus": []})");
  store.add_sharing_events({{6, plan, "job_admitted", R"({"pid": 1})"},
                            {7, std::nullopt, "stray_ledgers_removed", "{}"}});
  const auto stored = store.lane_plan(plan);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->id, plan);
  EXPECT_EQ(stored->created_ns, 5);
  EXPECT_EQ(stored->policy, "srtf");
  EXPECT_EQ(stored->plan_json, R"({"gpus": []})");
  EXPECT_TRUE(stored->applied);
  ASSERT_EQ(store.lane_plans(10).size(), 1u);
  const auto events = store.sharing_events(10);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].ts_ns, 6);
  EXPECT_EQ(events[0].plan_id, std::optional<int64_t>(plan));
  EXPECT_EQ(events[0].kind, "job_admitted");
  EXPECT_EQ(events[0].detail_json, R"({"pid": 1})");
  EXPECT_FALSE(events[1].plan_id);
  const auto admitted = store.sharing_events_of_kinds({"job_admitted"});
  ASSERT_EQ(admitted.size(), 1u);
  EXPECT_EQ(admitted[0].ts_ns, 6);
}

TEST(RetentionThread, TicksKeepSamplingWhileARetentionRunIsHeld) {
  test_support::TempDir dir;
  std::ostringstream log;
  std::atomic<int64_t> now = 1'700'000'000'000'000'000;
  DaemonConfig config;
  config.database = dir.file("host.db");
  config.nvml_library = NVML_STANDIN;
  config.dcgm_library = "off";
  config.trace_grace_ms = 100;
  auto core = std::make_unique<DaemonCore>(config, log, [&now] { return now.load(); });
  ASSERT_TRUE(core->device_sampling()) << log.str();
  Hold first_run;
  std::promise<void> second_run;
  std::atomic<int> runs_started{0};
  core->set_retention_probe([&] {
    if (runs_started.fetch_add(1) == 1) second_run.set_value();
    first_run();
  });

  // The ticks run on a thread of their own, so that a tick that waits for the held run fails the
  // test at the deadline instead of hanging it.
  auto ticking = std::async(std::launch::async, [&] {
    auto tick = [&] {
      now += 1'000'000'000;
      core->tick();
    };
    tick();  // the hourly run is due at start: posted to the retention thread
    if (first_run.entered.wait_for(60s) != std::future_status::ready) return false;
    for (int i = 0; i < 3; ++i) tick();  // the run is held: each tick still samples and returns
    return true;
  });
  const auto status = ticking.wait_for(120s);
  const int64_t runs_while_held = core->retention_runs();
  first_run.release();
  ASSERT_EQ(status, std::future_status::ready) << "a tick waited for the retention run";
  ASSERT_TRUE(ticking.get()) << "no retention run started";
  EXPECT_EQ(runs_while_held, 0);
  core->store().flush();
  {
    auto db = store::Database::open(dir.file("host.db"));
    auto q = db.prepare("SELECT count(DISTINCT ts) FROM device_samples");
    ASSERT_TRUE(q.step());
    EXPECT_EQ(q.column_int(0), 4) << "one sample time per tick";
  }
  core->reload(config);  // wakes the thread again with the reloaded bounds
  EXPECT_EQ(second_run.get_future().wait_for(60s), std::future_status::ready);
  core->shutdown();  // joins the thread once its run is over
  EXPECT_EQ(core->retention_runs(), 2);
}

}  // namespace
}  // namespace fleetscope::daemon
