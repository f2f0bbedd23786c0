// Commit reports for the agent link's record batches. A connection thread decodes a batch and
// queues its rows to the host database's writer as one transaction (whose own thread inserts and
// commits it), then hands the batch here with its ticket and answers the agent at once; one
// committer thread waits for each batch's own commit, in submission order, and reports it. So
// decoding the next batch, inserting this one and reporting the previous ones overlap, and an
// acknowledgement still says what is durable: the agent learns the committed sequence from the
// answers that follow. A batch is reported as soon as its transaction commits, never held back
// until the writer's whole queue (every other agent's batches) has drained.
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
  uint64_t ticket = 0;  // the writer's (store::Writer::add_rows)
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
  // wait_committed: returns once the batch of a ticket is durable, throws when it failed
  // (HostStore::wait_committed).
  // committed: called on the committer thread, in submission order, once per batch; `error` is
  // empty when the batch is durable.
  using WaitCommitted = std::function<void(uint64_t ticket)>;
  using Committed = std::function<void(const TakenBatch& batch, const std::string& error)>;
  GroupCommitter(WaitCommitted wait_committed, Committed committed);
  ~GroupCommitter();  // stop()
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  // The batch's rows are already queued to the writer. Never blocks on the database.
  void submit(const TakenBatch& batch);
  // Commits what was submitted, reports it, and joins the thread.
  void stop();

 private:
  void run();

  WaitCommitted wait_committed_;
  Committed committed_;
  std::mutex mutex_;
  std::condition_variable work_;
  std::vector<TakenBatch> submitted_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace fleetscope::daemon
