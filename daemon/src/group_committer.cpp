#include "fleetscope/daemon/group_committer.h"

#include <exception>
#include <string>

namespace fleetscope::daemon {

GroupCommitter::GroupCommitter(WaitCommitted wait_committed, Committed committed)
    : wait_committed_(std::move(wait_committed)), committed_(std::move(committed)) {
  thread_ = std::thread([this] { run(); });
}

GroupCommitter::~GroupCommitter() {
  stop();
}

void GroupCommitter::submit(const TakenBatch& batch) {
  {
    std::lock_guard lock(mutex_);
    submitted_.push_back(batch);
  }
  work_.notify_one();
}

void GroupCommitter::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void GroupCommitter::run() {
  std::vector<TakenBatch> group;
  std::unique_lock lock(mutex_);
  while (true) {
    work_.wait(lock, [&] { return stopping_ || !submitted_.empty(); });
    if (submitted_.empty()) return;  // stopping, and nothing left to commit
    group.clear();
    group.swap(submitted_);
    lock.unlock();
    // Each batch is reported once its own transaction committed: the batches queued after it
    // (other agents' included) are not waited for.
    for (const auto& batch : group) {
      std::string error;
      try {
        wait_committed_(batch.ticket);
      } catch (const std::exception& e) {
        error = e.what();
      }
      committed_(batch, error);
    }
    lock.lock();
  }
}

}  // namespace fleetscope::daemon
