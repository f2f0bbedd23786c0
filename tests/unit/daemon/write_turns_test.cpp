// WriteTurns: a short writer that finds the write lock taken by the bulk connection gets it at the
// bulk connection's next commit, before the bulk connection's next transaction; without the turns
// it only polls and misses the moment between two bulk transactions.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "fleetscope/daemon/write_turns.h"
#include "fleetscope/store/database.h"
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
  WriteTurns turns(path);
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

}  // namespace
}  // namespace fleetscope::daemon
