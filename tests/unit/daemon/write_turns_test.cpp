// WriteTurns: a short writer that finds the write lock taken by the bulk connection gets it at the
// bulk connection's next commit, before the bulk connection's next transaction; without the turns
// it only polls and misses the moment between two bulk transactions.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
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

}  // namespace
}  // namespace fleetscope::daemon
