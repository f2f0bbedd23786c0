// GroupCommitter: batches handed over while a commit runs are made durable together by the next
// one, reported in order; a failed commit is reported for each of its batches; stop() commits
// what was handed over.
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
  int flushes = 0;
  bool hold_first_flush = true, first_flush_started = false, release = false, fail = false;
  std::vector<std::pair<int64_t, std::string>> committed;  // sequence, error
  std::vector<int> flush_of_batch;                         // which flush made each batch durable

  void flush() {
    std::unique_lock lock(mutex);
    ++flushes;
    if (hold_first_flush && flushes == 1) {
      first_flush_started = true;
      changed.notify_all();
      changed.wait(lock, [&] { return release; });
    }
    if (fail) throw std::runtime_error("disk full");
  }
  void on_committed(const TakenBatch& batch, const std::string& error) {
    std::lock_guard lock(mutex);
    committed.emplace_back(batch.sequence, error);
    flush_of_batch.push_back(flushes);
    changed.notify_all();
  }
  bool wait_for(size_t n) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(10), [&] { return committed.size() >= n; });
  }
};

TEST(GroupCommitter, BatchesTakenDuringACommitShareTheNextOneInOrder) {
  Recorder r;
  GroupCommitter committer(
      [&] { r.flush(); }, [&](const TakenBatch& b, const std::string& e) { r.on_committed(b, e); });
  committer.submit({7, 1, 0, 100});
  {
    std::unique_lock lock(r.mutex);
    ASSERT_TRUE(
        r.changed.wait_for(lock, std::chrono::seconds(10), [&] { return r.first_flush_started; }));
  }
  for (int64_t s = 1; s <= 5; ++s) committer.submit({7, 1, s, 100});  // while the first commit runs
  {
    std::lock_guard lock(r.mutex);
    EXPECT_TRUE(r.committed.empty()) << "nothing is reported before its commit returns";
    r.release = true;
  }
  r.changed.notify_all();
  ASSERT_TRUE(r.wait_for(6));
  std::lock_guard lock(r.mutex);
  EXPECT_EQ(r.flushes, 2) << "the five batches taken meanwhile were committed by one flush";
  for (size_t i = 0; i < r.committed.size(); ++i) {
    EXPECT_EQ(r.committed[i].first, static_cast<int64_t>(i));
    EXPECT_TRUE(r.committed[i].second.empty());
    EXPECT_EQ(r.flush_of_batch[i], i == 0 ? 1 : 2);
  }
}

TEST(GroupCommitter, AFailedCommitIsReportedForEachOfItsBatches) {
  Recorder r;
  r.hold_first_flush = false;
  r.fail = true;
  GroupCommitter committer(
      [&] { r.flush(); }, [&](const TakenBatch& b, const std::string& e) { r.on_committed(b, e); });
  committer.submit({3, 2, 0, 10});
  ASSERT_TRUE(r.wait_for(1));
  std::lock_guard lock(r.mutex);
  EXPECT_EQ(r.committed[0].second, "disk full");
}

TEST(GroupCommitter, StopCommitsWhatWasTaken) {
  Recorder r;
  r.hold_first_flush = false;
  {
    GroupCommitter committer(
        [&] { r.flush(); },
        [&](const TakenBatch& b, const std::string& e) { r.on_committed(b, e); });
    for (int64_t s = 0; s < 50; ++s) committer.submit({1, 1, s, 1});
    committer.stop();
  }
  EXPECT_EQ(r.committed.size(), 50u);
  EXPECT_GE(r.flushes, 1);
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
