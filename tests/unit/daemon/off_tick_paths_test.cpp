// What does not wait for what in the daemon (docs/daemon.md, "Off the bulk path: locks and I/O"):
// a workflow owner lookup does not wait for a metrics transaction on the maintenance connection.
// Each test
// holds the slow side at a seam until the fast side has been shown to return (events, no sleeps;
// a deadline only turns a regression into a failure instead of a hang).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <tuple>

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

}  // namespace
}  // namespace fleetscope::daemon
