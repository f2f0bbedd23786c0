// GroupCommitter: each batch is reported once its own commit is done (its ticket), in submission
// order, never before; a failed commit is reported for its batch; stop() reports what was handed
// over.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "fleetscope/daemon/group_committer.h"

namespace fleetscope::daemon {
namespace {

struct Recorder {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<uint64_t> waited;  // tickets, in the order the committer waited for them
  bool hold_first_wait = true, first_wait_started = false, release = false;
  uint64_t failing_ticket = 0;                             // 0: none fails
  std::vector<std::pair<int64_t, std::string>> committed;  // sequence, error
  std::vector<size_t> waits_before_report;                 // waits done when each was reported

  void wait_committed(uint64_t ticket) {
    std::unique_lock lock(mutex);
    waited.push_back(ticket);
    if (hold_first_wait && waited.size() == 1) {
      first_wait_started = true;
      changed.notify_all();
      changed.wait(lock, [&] { return release; });
    }
    if (ticket == failing_ticket) throw std::runtime_error("disk full");
  }
  void on_committed(const TakenBatch& batch, const std::string& error) {
    std::lock_guard lock(mutex);
    committed.emplace_back(batch.sequence, error);
    waits_before_report.push_back(waited.size());
    changed.notify_all();
  }
  bool wait_for(size_t n) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(10), [&] { return committed.size() >= n; });
  }
  GroupCommitter::WaitCommitted waiter() {
    return [this](uint64_t ticket) { wait_committed(ticket); };
  }
  GroupCommitter::Committed reporter() {
    return [this](const TakenBatch& b, const std::string& e) { on_committed(b, e); };
  }
};

TEST(GroupCommitter, EachBatchIsReportedAfterItsOwnCommitInOrder) {
  Recorder r;
  GroupCommitter committer(r.waiter(), r.reporter());
  committer.submit({7, 1, 0, 100, 1});
  {
    std::unique_lock lock(r.mutex);
    ASSERT_TRUE(
        r.changed.wait_for(lock, std::chrono::seconds(10), [&] { return r.first_wait_started; }));
  }
  for (int64_t s = 1; s <= 5; ++s)  // while the first commit runs
    committer.submit({7, 1, s, 100, static_cast<uint64_t>(s + 1)});
  {
    std::lock_guard lock(r.mutex);
    EXPECT_TRUE(r.committed.empty()) << "nothing is reported before its commit is done";
    r.release = true;
  }
  r.changed.notify_all();
  ASSERT_TRUE(r.wait_for(6));
  std::lock_guard lock(r.mutex);
  EXPECT_EQ(r.waited, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}));
  for (size_t i = 0; i < r.committed.size(); ++i) {
    EXPECT_EQ(r.committed[i].first, static_cast<int64_t>(i));
    EXPECT_TRUE(r.committed[i].second.empty());
    EXPECT_EQ(r.waits_before_report[i], i + 1) << "batch " << i << " waited for its own ticket";
  }
}

TEST(GroupCommitter, AFailedCommitIsReportedForItsBatch) {
  Recorder r;
  r.hold_first_wait = false;
  r.failing_ticket = 2;
  GroupCommitter committer(r.waiter(), r.reporter());
  committer.submit({3, 2, 0, 10, 1});
  committer.submit({3, 2, 1, 10, 2});
  ASSERT_TRUE(r.wait_for(2));
  std::lock_guard lock(r.mutex);
  EXPECT_EQ(r.committed[0].second, "");
  EXPECT_EQ(r.committed[1].second, "disk full");
}

TEST(GroupCommitter, StopReportsWhatWasTaken) {
  Recorder r;
  r.hold_first_wait = false;
  {
    GroupCommitter committer(r.waiter(), r.reporter());
    for (int64_t s = 0; s < 50; ++s) committer.submit({1, 1, s, 1, static_cast<uint64_t>(s + 1)});
    committer.stop();
  }
  EXPECT_EQ(r.committed.size(), 50u);
  EXPECT_EQ(r.waited.size(), 50u);
}

TEST(CommittedPrefix, AcknowledgesOnlyAnUnbrokenRunOfCommittedBatches) {
  CommittedPrefix prefix;
  EXPECT_EQ(prefix.value(), -1);
  prefix.on_result(0, true);
  prefix.on_result(1, true);
  EXPECT_EQ(prefix.value(), 1);
  prefix.on_result(2, false);  // its rows did not land
  prefix.on_result(3, true);   // later batches did, but the agent must not believe 2 landed
  prefix.on_result(4, true);
  EXPECT_EQ(prefix.value(), 1);
  EXPECT_TRUE(prefix.broken());

  CommittedPrefix gap;
  gap.on_result(0, true);
  gap.on_result(2, true);  // 1 was never reported committed
  EXPECT_EQ(gap.value(), 0);
}

}  // namespace
}  // namespace fleetscope::daemon
