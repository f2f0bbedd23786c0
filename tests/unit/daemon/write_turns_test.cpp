// WriteTurns: a short writer that finds the write lock taken by the bulk connection gets it at the
// bulk connection's next commit, before the bulk connection's next transaction; without the turns
// it only polls and misses the moment between two bulk transactions.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "fleetscope/daemon/write_turns.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/writer.h"
#include "temp_dir.h"

namespace fleetscope::daemon {
namespace {

int64_t count_rows(store::Database& db) {
  auto s = db.prepare("SELECT count(*) FROM t");
  s.step();
  return s.column_int(0);
}

TEST(WriteTurns, AShortWriterWaitingForTheLockGoesBeforeTheNextBulkTransaction) {
  test_support::TempDir dir;
  const std::string path = dir.file("turns.db");
  {
    store::Database setup = store::Database::create(path);
    setup.exec("PRAGMA journal_mode = WAL");
    setup.exec("CREATE TABLE t(x INTEGER)");
  }
  // The bulk writer waits for the short writer however slowly the machine schedules it (the
  // default gives up after kMaxYield).
  WriteTurns turns(path, std::chrono::seconds(10));
  store::Database bulk = store::Database::open(path, store::OpenMode::read_write);
  store::Database short_db = store::Database::open(path, store::OpenMode::read_write);
  turns.install_bulk(bulk.raw());
  auto short_writer = turns.install_short(short_db.raw());

  bulk.exec("BEGIN IMMEDIATE");  // the bulk connection holds the write lock
  bulk.exec("INSERT INTO t VALUES (1)");
  std::atomic<bool> short_done{false};
  std::thread writer([&] {
    short_db.exec("INSERT INTO t VALUES (2)");  // busy: waits for the bulk commit
    short_done = true;
  });
  while (turns.waiting() == 0) std::this_thread::yield();  // it found the lock taken
  EXPECT_FALSE(short_done);
  bulk.exec("COMMIT");  // its WAL hook lets the waiting short writer commit first
  const int64_t rows_at_bulk_return = count_rows(bulk);
  writer.join();
  EXPECT_EQ(rows_at_bulk_return, 2) << "the short write committed before the bulk commit returned";
  EXPECT_EQ(turns.counts().yields, 1);
  EXPECT_EQ(turns.counts().bulk_commits, 1);
  EXPECT_EQ(turns.waiting(), 0);
  turns.stop();
}

// A short writer's busy handler can be called for an operation that is no transaction: a TRUNCATE
// checkpoint (retention's) waits for the bulk writer through it and ends with no commit or
// rollback hook. Its registration must not outlive it: the bulk writer would otherwise yield
// kMaxYield after every later commit, to nobody (cc5c307). Nor may a short writer's connection,
// closed while registered, stay counted.
TEST(WriteTurns, AWaiterWithoutATransactionIsForgottenOnceItsBusyHandlerStops) {
  test_support::TempDir dir;
  const std::string path = dir.file("turns.db");
  {
    store::Database setup = store::Database::create(path);
    setup.exec("PRAGMA journal_mode = WAL");
    setup.exec("CREATE TABLE t(x INTEGER)");
  }
  WriteTurns turns(path);
  store::Database bulk = store::Database::open(path, store::OpenMode::read_write);
  auto short_db =
      std::make_unique<store::Database>(store::Database::open(path, store::OpenMode::read_write));
  turns.install_bulk(bulk.raw());
  auto short_writer = turns.install_short(short_db->raw());

  bulk.exec("BEGIN IMMEDIATE");  // the bulk connection holds the write lock
  bulk.exec("INSERT INTO t VALUES (1)");
  std::thread checkpoint([&] {
    // Waits (busy handler) for the writer to finish; no commit hook follows.
    short_db->exec("PRAGMA wal_checkpoint(TRUNCATE)");
  });
  while (turns.waiting() == 0) std::this_thread::yield();  // it found the lock taken
  bulk.exec("COMMIT");  // yields to the checkpoint, which then runs
  checkpoint.join();
  EXPECT_EQ(turns.counts().yields, 1);

  // The checkpoint is over and its busy handler no longer calls: the next bulk commits go on at
  // once.
  for (int i = 0; i < 3; ++i) {
    bulk.exec("BEGIN IMMEDIATE");
    bulk.exec("INSERT INTO t VALUES (3)");
    bulk.exec("COMMIT");
  }
  EXPECT_EQ(turns.counts().yields, 1) << "the bulk writer yielded to a short writer gone";

  // A connection closed while it was still registered is no longer counted.
  short_db.reset();
  short_writer.reset();
  EXPECT_EQ(turns.waiting(), 0);
  turns.stop();
}

// The bulk store::Writer asks between its insert statements whether a short writer waits
// (WriterOptions::commit_early = short_writer_wants_turn) and then commits early: a catalog write
// that arrives in the middle of a 16,384-row batch waits for a few hundred rows, not the rest of
// the batch. The batch still counts as committed (its ticket) only once all of it is.
TEST(WriteTurns, TheBulkWriterCommitsEarlyForAShortWriterThatWaits) {
  test_support::TempDir dir;
  const std::string path = dir.file("turns.db");
  store::Database::create(path).close();
  WriteTurns turns(path, std::chrono::seconds(10));  // (as in the first test)
  store::Database bulk = store::Database::open(path, store::OpenMode::read_write);
  turns.install_bulk(bulk.raw());
  std::mutex mutex;
  std::condition_variable changed;
  bool in_transaction = false;
  store::WriterOptions options;
  options.keep_wal_after_finish = true;
  options.build_indexes = false;
  options.commit_early = [&] {
    std::unique_lock lock(mutex);
    if (!in_transaction) {
      // The first statement of the batch is in: let the short writer try now, and go on once it
      // found the lock taken (so the test does not depend on which thread is faster).
      in_transaction = true;
      changed.notify_all();
      while (turns.waiting() == 0) changed.wait_for(lock, std::chrono::milliseconds(1));
    }
    return turns.short_writer_wants_turn();
  };
  store::Writer writer(std::move(bulk), options);

  store::Database short_db = store::Database::open(path, store::OpenMode::read_write);
  auto short_writer = turns.install_short(short_db.raw());
  std::thread catalog([&] {
    {
      std::unique_lock lock(mutex);
      // (Bounded: a writer that never asks commits the whole batch at once, and the checks below
      // say so instead of a hang.)
      changed.wait_for(lock, std::chrono::seconds(10), [&] { return in_transaction; });
    }
    short_db.exec("INSERT INTO meta(key, value) VALUES ('catalog', 'row')");  // waits (busy)
  });

  store::RowVectors rows;
  constexpr int kRows = 4096;
  for (int i = 0; i < kRows; ++i) {
    store::Kernel k;
    k.start = 1000 + i * 10;
    k.end = k.start + 5;
    k.streamId = 7;
    k.captureId = 1;
    k.demangledName = "kernel";
    rows.push(std::move(k));
  }
  const uint64_t ticket = writer.add_rows(rows, kRows);
  writer.wait_committed(ticket);
  catalog.join();
  EXPECT_EQ(turns.counts().bulk_commits, 2) << "one batch, committed in two parts";
  EXPECT_EQ(turns.counts().yields, 1);
  store::Database check = store::Database::open(path);
  auto kernels = check.prepare("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL");
  kernels.step();
  EXPECT_EQ(kernels.column_int(0), kRows);
  auto meta = check.prepare("SELECT count(*) FROM meta WHERE key = 'catalog'");
  meta.step();
  EXPECT_EQ(meta.column_int(0), 1);
  writer.finish();
  turns.stop();
}

// A short writer that waits for more than the bulk writer (retention's TRUNCATE checkpoint waits
// for the readers too) gets one early commit and its yield, not one after every few hundred rows:
// each would stop the bulk writer for max_yield.
TEST(WriteTurns, NoMoreEarlyCommitsForAWriterThatDidNotTakeItsTurn) {
  test_support::TempDir dir;
  const std::string path = dir.file("turns.db");
  {
    store::Database setup = store::Database::create(path);
    setup.exec("PRAGMA journal_mode = WAL");
    setup.exec("CREATE TABLE t(x INTEGER)");
  }
  WriteTurns turns(path);
  store::Database bulk = store::Database::open(path, store::OpenMode::read_write);
  store::Database short_db = store::Database::open(path, store::OpenMode::read_write);
  store::Database reader = store::Database::open(path);
  turns.install_bulk(bulk.raw());
  auto short_writer = turns.install_short(short_db.raw());

  reader.exec("BEGIN");
  EXPECT_EQ(count_rows(reader), 0);  // a read transaction on the current snapshot
  bulk.exec("BEGIN IMMEDIATE");
  bulk.exec("INSERT INTO t VALUES (1)");
  std::thread checkpoint([&] { short_db.exec("PRAGMA wal_checkpoint(TRUNCATE)"); });
  while (turns.waiting() == 0) std::this_thread::yield();
  EXPECT_TRUE(turns.short_writer_wants_turn());
  bulk.exec("COMMIT");  // the checkpoint gets the write lock, then waits for the reader
  EXPECT_EQ(turns.counts().yields, 1);
  EXPECT_EQ(turns.waiting(), 1);
  EXPECT_FALSE(turns.short_writer_wants_turn())
      << "it did not take its turn: no more early commits";
  reader.exec("COMMIT");  // the checkpoint can finish
  checkpoint.join();
  turns.stop();
}

}  // namespace
}  // namespace fleetscope::daemon
