// Turns between the host database's writing connections, all in this process. SQLite lets one
// connection write at a time, and a connection that finds the write lock taken only polls for it
// (the default busy handler sleeps 1, 2, 5, ... up to 100 ms between tries). The bulk writer
// commits one agent batch after another, the lock free only for the moment between two of them,
// so the short writers (the catalog rows of opening and closing a window, the findings, the
// daemon's own tables) kept missing it: closing a window while 8 agents streamed waited up to
// seconds. Here a short writer that finds the lock taken registers and sleeps until the bulk
// writer's next commit, and the bulk writer, after each commit, lets the registered short writers
// take the lock before it begins its next transaction (waiting at most kMaxYield). The bulk writer
// also asks, every few hundred rows, whether a short writer waits (short_writer_wants_turn) and
// then commits early (store::WriterOptions::commit_early), so that wait is a fraction of a
// transaction. The turns themselves go through SQLite's hooks on the connections
// (sqlite3_busy_handler; sqlite3_wal_hook, called after a commit with its write lock released;
// sqlite3_rollback_hook).
//
// The WAL hook replaces SQLite's automatic checkpoint on these connections (which is itself a WAL
// hook that checkpoints on the committing thread): here a thread of its own runs PASSIVE
// checkpoints (they never block a writer) once the log holds kCheckpointPages frames, so the bulk
// writer's thread spends no time copying pages back into the database file.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

struct sqlite3;

namespace fleetscope::daemon {

class WriteTurns {
 public:
  // path: the database, for the checkpointer's own connection. max_yield: how long the bulk
  // writer waits at most, after a commit, for the short writers it lets go (kMaxYield; tests
  // that must not depend on the scheduler give more).
  explicit WriteTurns(std::string path, std::chrono::milliseconds max_yield = kMaxYield);
  ~WriteTurns();  // stop()
  WriteTurns(const WriteTurns&) = delete;
  WriteTurns& operator=(const WriteTurns&) = delete;
  // Joins the checkpointer. Before the connections close; their hooks stay valid (they then
  // neither yield nor wait).
  void stop();

  // The bulk writer's connection: yields to waiting short writers after each commit.
  void install_bulk(sqlite3* db);

  // A short writer's connection. The returned object is the hooks' state: keep it until the
  // connection is closed.
  class ShortWriter;
  std::unique_ptr<ShortWriter> install_short(sqlite3* db);

  static constexpr auto kMaxYield = std::chrono::milliseconds(50);  // the default max_yield
  static constexpr auto kShortWriterTimeout = std::chrono::milliseconds(5000);  // as before
  static constexpr int kCheckpointPages = 1000;  // SQLite's default autocheckpoint
  // A waiting short writer's busy handler runs at least every 10 ms. A registration not renewed
  // for this long is over although no commit or rollback said so: the operation that waited was
  // not a transaction (retention's TRUNCATE checkpoint) or its connection is gone.
  static constexpr auto kWaiterGone = std::chrono::milliseconds(30);

  // For tests and the benchmark: commits the bulk writer made, and how often it waited for a
  // short writer.
  struct Counts {
    int64_t bulk_commits = 0, yields = 0, checkpoints = 0;
  };
  Counts counts() const;
  int waiting() const;  // short writers waiting for the write lock now
  // True while a short writer waits for the bulk connection's write lock: the bulk writer then
  // commits what it has inserted so far (store::WriterOptions::commit_early), its WAL hook lets
  // the short writer go, and its batch goes on in a new transaction. A short write then waits for
  // a few hundred rows, not for the rest of a 16,384-row batch. False for a writer that did not
  // take the lock within the last yield (max_yield): it waits for more than the bulk writer.
  bool short_writer_wants_turn() const;

 private:
  static int on_bulk_commit(void* self, sqlite3* db, const char* schema, int pages);
  static int on_short_busy(void* writer, int tries);
  static int on_short_commit(void* writer, sqlite3* db, const char* schema, int pages);
  static void on_short_rollback(void* writer);
  void done_waiting(ShortWriter& writer);  // mutex_ held
  bool short_writer_waiting() const;       // mutex_ held
  void request_checkpoint(int pages);      // mutex_ held
  void checkpointer_loop();

  std::string path_;
  std::chrono::milliseconds max_yield_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int waiting_ = 0;  // short writers that found the lock taken and have not committed since
  std::chrono::steady_clock::time_point last_busy_;  // the latest call of a busy handler
  // The last yield ran out with a short writer still waiting; no early commits until a writer
  // registers or finishes waiting (short_writer_wants_turn).
  bool yield_expired_ = false;
  Counts counts_;
  bool checkpoint_wanted_ = false, stopping_ = false;
  std::thread checkpointer_;
};

class WriteTurns::ShortWriter {
 public:
  explicit ShortWriter(WriteTurns& turns) : turns_(turns) {}
  ~ShortWriter();  // no longer counted as waiting
  ShortWriter(const ShortWriter&) = delete;
  ShortWriter& operator=(const ShortWriter&) = delete;

 private:
  friend class WriteTurns;
  WriteTurns& turns_;
  bool waiting_ = false;
  std::chrono::steady_clock::time_point since_;
};

}  // namespace fleetscope::daemon
