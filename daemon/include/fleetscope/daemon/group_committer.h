// Group commit for the agent link's record batches. A connection thread decodes a batch and
// appends its rows to the host database's writer (whose own thread inserts them), then hands the
// batch here and answers the agent at once; one committer thread makes everything handed over so
// far durable with a single flush (one transaction for several batches when they arrive faster
// than a commit takes) and reports each batch as committed. So decoding the next batch, inserting
// this one and committing the previous ones overlap, and an acknowledgement still says what is
// durable: the agent learns the committed sequence from the answers that follow.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace fleetscope::daemon {

struct TakenBatch {
  int64_t capture_id = 0;
  int64_t agent_id = 0;
  int64_t sequence = 0;
  size_t rows = 0;
};

// The sequence an agent is told is committed (the answer of pushRecords): the highest sequence
// such that every batch of the agent's window up to it is durable. Commit results arrive in
// sequence order (the committer reports in submission order, and one agent's batches are submitted
// in sequence); a batch whose commit failed stops the prefix there for the rest of the window, so
// a later batch that did commit never makes the agent believe the failed one landed.
class CommittedPrefix {
 public:
  void on_result(int64_t sequence, bool committed) {
    if (broken_) return;
    if (!committed || sequence != value_ + 1) {  // failed, or a gap: never acknowledge past it
      broken_ = true;
      return;
    }
    value_ = sequence;
  }
  int64_t value() const { return value_; }  // -1: nothing committed yet
  bool broken() const { return broken_; }

 private:
  int64_t value_ = -1;
  bool broken_ = false;
};

class GroupCommitter {
 public:
  // flush: makes every row appended before the call durable (HostStore::flush).
  // committed: called on the committer thread, in submission order, once per batch; `error` is
  // empty when the batch is durable.
  using Flush = std::function<void()>;
  using Committed = std::function<void(const TakenBatch& batch, const std::string& error)>;
  GroupCommitter(Flush flush, Committed committed);
  ~GroupCommitter();  // stop()
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  // The batch's rows are already appended to the writer. Never blocks on the database.
  void submit(const TakenBatch& batch);
  // Commits what was submitted, reports it, and joins the thread.
  void stop();

 private:
  void run();

  Flush flush_;
  Committed committed_;
  std::mutex mutex_;
  std::condition_variable work_;
  std::vector<TakenBatch> submitted_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace fleetscope::daemon
