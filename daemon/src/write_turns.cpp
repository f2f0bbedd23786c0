#include "fleetscope/daemon/write_turns.h"

#include <sqlite3.h>

#include <optional>

#include "fleetscope/store/database.h"

namespace fleetscope::daemon {

WriteTurns::WriteTurns(std::string path, std::chrono::milliseconds max_yield)
    : path_(std::move(path)), max_yield_(max_yield) {
  checkpointer_ = std::thread([this] { checkpointer_loop(); });
}

WriteTurns::~WriteTurns() {
  stop();
}

void WriteTurns::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (checkpointer_.joinable()) checkpointer_.join();
}

void WriteTurns::install_bulk(sqlite3* db) {
  sqlite3_wal_hook(db, &WriteTurns::on_bulk_commit, this);
}

std::unique_ptr<WriteTurns::ShortWriter> WriteTurns::install_short(sqlite3* db) {
  auto writer = std::make_unique<ShortWriter>(*this);
  sqlite3_busy_handler(db, &WriteTurns::on_short_busy, writer.get());
  sqlite3_wal_hook(db, &WriteTurns::on_short_commit, writer.get());
  sqlite3_rollback_hook(db, &WriteTurns::on_short_rollback, writer.get());
  return writer;
}

WriteTurns::Counts WriteTurns::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

int WriteTurns::waiting() const {
  std::lock_guard lock(mutex_);
  return waiting_;
}

bool WriteTurns::short_writer_wants_turn() const {
  std::lock_guard lock(mutex_);
  return short_writer_waiting() && !yield_expired_ && !stopping_;
}

int WriteTurns::on_bulk_commit(void* self, sqlite3*, const char*, int pages) {
  auto& turns = *static_cast<WriteTurns*>(self);
  std::unique_lock lock(turns.mutex_);
  ++turns.counts_.bulk_commits;
  turns.request_checkpoint(pages);
  turns.changed_.notify_all();  // the short writers waiting for this commit try again
  if (turns.short_writer_waiting() && !turns.stopping_) {
    ++turns.counts_.yields;
    // The write lock is free now: the next bulk transaction begins once they have committed.
    const bool done = turns.changed_.wait_for(
        lock, turns.max_yield_, [&] { return !turns.short_writer_waiting() || turns.stopping_; });
    // A writer still waiting after the longest yield waits for something else too (a TRUNCATE
    // checkpoint for the readers): no more early commits for it, which would each stop the bulk
    // writer for max_yield after a few hundred rows. It still goes first after each batch.
    if (!done) turns.yield_expired_ = true;
  }
  return SQLITE_OK;
}

int WriteTurns::on_short_busy(void* opaque, int tries) {
  auto& writer = *static_cast<ShortWriter*>(opaque);
  WriteTurns& turns = writer.turns_;
  std::unique_lock lock(turns.mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (tries == 0) writer.since_ = now;
  if (now - writer.since_ >= kShortWriterTimeout) {
    turns.done_waiting(writer);
    return 0;  // SQLITE_BUSY for the caller, as the busy timeout did
  }
  turns.last_busy_ = now;
  if (!writer.waiting_) {
    writer.waiting_ = true;
    ++turns.waiting_;
    turns.yield_expired_ = false;  // a new waiter: worth an early commit
  }
  // Until the bulk writer's next commit; at most 10 ms, for a lock held by a connection outside
  // these turns (fleetscope analyze storing findings beside the daemon).
  const int64_t commits = turns.counts_.bulk_commits;
  turns.changed_.wait_for(lock, std::chrono::milliseconds(10),
                          [&] { return turns.counts_.bulk_commits != commits; });
  return 1;
}

int WriteTurns::on_short_commit(void* opaque, sqlite3*, const char*, int pages) {
  auto& writer = *static_cast<ShortWriter*>(opaque);
  std::lock_guard lock(writer.turns_.mutex_);
  writer.turns_.done_waiting(writer);
  writer.turns_.request_checkpoint(pages);
  return SQLITE_OK;
}

void WriteTurns::on_short_rollback(void* opaque) {
  auto& writer = *static_cast<ShortWriter*>(opaque);
  std::lock_guard lock(writer.turns_.mutex_);
  writer.turns_.done_waiting(writer);
}

WriteTurns::ShortWriter::~ShortWriter() {
  std::lock_guard lock(turns_.mutex_);
  turns_.done_waiting(*this);
}

bool WriteTurns::short_writer_waiting() const {
  return waiting_ > 0 && std::chrono::steady_clock::now() - last_busy_ < kWaiterGone;
}

void WriteTurns::done_waiting(ShortWriter& writer) {
  if (!writer.waiting_) return;
  writer.waiting_ = false;
  --waiting_;
  yield_expired_ = false;
  changed_.notify_all();
}

void WriteTurns::request_checkpoint(int pages) {
  if (pages < kCheckpointPages || checkpoint_wanted_) return;
  checkpoint_wanted_ = true;
  changed_.notify_all();
}

void WriteTurns::checkpointer_loop() {
  std::unique_lock lock(mutex_);
  std::optional<store::Database> db;
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || checkpoint_wanted_; });
    if (stopping_) return;
    lock.unlock();
    try {
      if (!db) db.emplace(store::Database::open(path_, store::OpenMode::read_write));
      // PASSIVE: copies what no reader still needs, never waits for (or blocks) a writer.
      sqlite3_wal_checkpoint_v2(db->raw(), nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    } catch (...) {
      // The next request tries again; the log only grows meanwhile.
    }
    lock.lock();
    ++counts_.checkpoints;
    checkpoint_wanted_ = false;
    // At most one checkpoint per 50 ms: while a reader pins the log, asking again at every commit
    // would only spin.
    changed_.wait_for(lock, std::chrono::milliseconds(50), [&] { return stopping_; });
  }
}

}  // namespace fleetscope::daemon
