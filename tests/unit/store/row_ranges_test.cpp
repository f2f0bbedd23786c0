// capture_row_ranges (store/capture_rows.h): the writer records where each capture's rows of an
// event table lie, every reader selects a capture's rows by those ranges and gets exactly the rows
// the plain `captureId = ?` filter gets, the migration to schema 7 fills them for older files,
// deleting a capture deletes its ranges, and changed rowids (a VACUUM) fall back to the plain
// filter with a note instead of missing rows.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli_run.h"
#include "fleetscope/store/capture_rows.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/table_columns.h"
#include "fleetscope/store/writer.h"
#include "raw_sql.h"
#include "temp_dir.h"

using namespace fleetscope;
using namespace fleetscope::store;

namespace {

constexpr int kCaptures = 8;

// The event tables with row ranges (tables.py: every event table but iterations).
std::vector<std::string> ranged_tables() {
  std::vector<std::string> out;
  for (const auto& t : table_columns::kTables)
    if (has_row_ranges(std::string(t.name))) out.emplace_back(t.name);
  return out;
}

std::vector<int64_t> ints(const Database& db, const std::string& sql, int64_t capture) {
  std::vector<int64_t> out;
  Statement s = db.prepare(sql);
  s.bind(1, capture);
  while (s.step()) out.push_back(s.column_int(0));
  std::sort(out.begin(), out.end());
  return out;
}

// The rowids of the capture's rows of `table`: through capture_rows_sql, and by the plain filter.
std::vector<int64_t> by_ranges(const Database& db, const std::string& table, int64_t capture) {
  return ints(db, "SELECT " + table + ".rowid" + capture_rows_sql(db, table, capture), capture);
}
std::vector<int64_t> by_filter(const Database& db, const std::string& table, int64_t capture) {
  return ints(db, "SELECT rowid FROM " + table + " WHERE captureId = ?1", capture);
}

Kernel kernel(int64_t capture, int i) {
  Kernel k;
  k.start = 1000 * i + capture;
  k.end = k.start + 500;
  k.streamId = 7;
  k.demangledName = "k" + std::to_string(i % 3);
  k.captureId = capture;
  return k;
}

// A file the daemon's way: 8 captures' batches committed in turn (each agent's batch one
// transaction of its own, add_rows), rows of other tables among them, a device sample outside
// any capture; no per-capture index (the host database keeps none on its event tables).
std::vector<int64_t> write_interleaved(const std::string& path, int rounds = 4) {
  WriterOptions options;
  options.build_indexes = false;
  options.batch_rows = 50;
  Writer w(Database::create(path), options);
  std::vector<int64_t> captures;
  for (int c = 0; c < kCaptures; ++c) captures.push_back(w.add_capture({.source = "test"}));
  for (int round = 0; round < rounds; ++round)
    for (int64_t capture : captures) {
      RowVectors rows;
      for (int i = 0; i < 20 + capture; ++i) rows.push(kernel(capture, round * 100 + i));
      rows.push(RuntimeCall{
          .start = round, .end = round + 5, .name = "cudaLaunchKernel", .captureId = capture});
      rows.push(CpuOp{.start = round, .end = round + 9, .name = "aten::mm", .captureId = capture});
      rows.push(MemoryEvent{.ts = round, .captureId = capture, .bytes = 64});
      rows.push(
          DeviceSample{.ts = round, .metric = "gpu_util_pct", .value = 1, .captureId = capture});
      rows.push(DeviceSample{.ts = round, .metric = "gpu_util_pct", .value = 2});
      rows.push(Iteration{
          .captureId = capture, .globalPid = 1, .step = round, .start = round, .end = round + 1});
      w.wait_committed(w.add_rows(rows, rows.size()));
    }
  // And row by row (add), the writer's own batches.
  for (int i = 0; i < 120; ++i) w.add(kernel(captures[static_cast<size_t>(i % 3)], 9000 + i));
  w.finish();
  return captures;
}

int64_t count_rows(const Database& db, const std::string& sql) {
  Statement s = db.prepare(sql);
  return s.step() ? s.column_int(0) : -1;
}

// Every capture's rows, read every way, are the plain filter's.
void expect_readers_match_filter(const std::string& path, const std::vector<int64_t>& captures) {
  Reader reader(path);
  const Database& db = reader.database();
  for (int64_t capture : captures) {
    for (const std::string& table : ranged_tables())
      EXPECT_EQ(by_ranges(db, table, capture), by_filter(db, table, capture))
          << table << " capture " << capture;
    EventFilter f;
    f.captureId = capture;
    EXPECT_EQ(static_cast<int64_t>(reader.kernels(f).size()),
              count_rows(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE captureId = " +
                                 std::to_string(capture)));
    EXPECT_EQ(static_cast<int64_t>(reader.runtime_calls(f).size()),
              count_rows(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE captureId = " +
                                 std::to_string(capture)));
    EXPECT_EQ(static_cast<int64_t>(reader.cpu_ops(f).size()),
              count_rows(
                  db, "SELECT count(*) FROM cpu_ops WHERE captureId = " + std::to_string(capture)));
    EXPECT_EQ(static_cast<int64_t>(reader.memory_events(f).size()),
              count_rows(db, "SELECT count(*) FROM memory_events WHERE captureId = " +
                                 std::to_string(capture)));
    EXPECT_EQ(static_cast<int64_t>(reader.device_samples(f).size()),
              count_rows(db, "SELECT count(*) FROM device_samples WHERE captureId = " +
                                 std::to_string(capture)));
    EXPECT_EQ(static_cast<int64_t>(reader.rows_of<Kernel>(capture).size()),
              count_rows(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE captureId = " +
                                 std::to_string(capture)));
    // A window of start: the ranges filtered on a file without the (captureId, start) index.
    f.window = {1000 * 105, 1000 * 210};
    EXPECT_EQ(
        static_cast<int64_t>(reader.kernels(f).size()),
        count_rows(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE captureId = " +
                           std::to_string(capture) + " AND start < " + std::to_string(1000 * 210) +
                           " AND end > " + std::to_string(1000 * 105)));
    for (const auto& [table, rows] : reader.counts(capture))
      EXPECT_EQ(rows, count_rows(db, "SELECT count(*) FROM " + table +
                                         " WHERE captureId = " + std::to_string(capture)))
          << table;
  }
}

using fleetscope::test_support::raw_exec;

}  // namespace

TEST(RowRanges, WriterRecordsRangesOfInterleavedCaptures) {
  test_support::TempDir dir;
  const std::string path = dir.file("host.db");
  const std::vector<int64_t> captures = write_interleaved(path);
  Reader reader(path);
  const Database& db = reader.database();
  for (int64_t capture : captures) {
    // One range per committed batch of the capture (4 rounds), fewer where runs join.
    const int64_t ranges = count_rows(
        db, "SELECT count(*) FROM capture_row_ranges WHERE tbl = 'cpu_ops' AND captureId = " +
                std::to_string(capture));
    EXPECT_EQ(ranges, 4) << capture;
    for (const std::string& table : ranged_tables()) {
      // Every row of the capture lies in a range of it, and the ranges' rows are its rows.
      EXPECT_EQ(count_rows(db, "SELECT count(*) FROM " + table +
                                   " t WHERE captureId = " + std::to_string(capture) +
                                   " AND NOT EXISTS (SELECT 1 FROM capture_row_ranges r WHERE "
                                   "r.tbl = '" +
                                   table +
                                   "' AND r.captureId = t.captureId AND t.rowid BETWEEN "
                                   "r.first_rowid AND r.last_rowid)"),
                0)
          << table;
      EXPECT_EQ(count_rows(db, "SELECT total(rows) FROM capture_row_ranges WHERE tbl = '" + table +
                                   "' AND captureId = " + std::to_string(capture)),
                count_rows(db, "SELECT count(*) FROM " + table +
                                   " WHERE captureId = " + std::to_string(capture)))
          << table;
      EXPECT_TRUE(capture_row_ranges_hold(db, table, capture)) << table;
    }
  }
  // Iterations are found by their key (captureId, globalPid, step), not by ranges.
  EXPECT_EQ(count_rows(db, "SELECT count(*) FROM capture_row_ranges WHERE tbl = 'iterations'"), 0);
  // Samples taken outside any capture are in no range.
  EXPECT_EQ(count_rows(db, "SELECT count(*) FROM capture_row_ranges WHERE captureId IS NULL"), 0);
}

TEST(RowRanges, ReadersReturnThePlainFiltersRowsOnADaemonWayFile) {
  test_support::TempDir dir;
  const std::string path = dir.file("host.db");
  const std::vector<int64_t> captures = write_interleaved(path);
  // Like the host database, the file has no per-capture index on its event tables.
  EXPECT_EQ(
      count_rows(Reader(path).database(),
                 "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND "
                 "tbl_name != 'StringIds'"),
      0);
  expect_readers_match_filter(path, captures);
  Reader reader(path);
  EXPECT_TRUE(capture_has_rows(reader.database(), captures[0]));
  EXPECT_EQ(*capture_last_row_ns(reader.database(), captures[0]),
            count_rows(reader.database(),
                       "SELECT max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE captureId = " +
                           std::to_string(captures[0])));
}

TEST(RowRanges, ReadersReturnThePlainFiltersRowsOnAnImportedFile) {
  test_support::TempDir dir;
  const std::string trace =
      std::string(FLEETSCOPE_SHARED_DATA) +
      "/traces/kineto/hta-critical_path_cuda_event_sync_event_sync_trace.json.gz";
  const std::string db = dir.file("imported.db");
  const test_support::CliRun imported = test_support::run_cli({"import", trace, "-o", db});
  ASSERT_EQ(imported.code, 0) << imported.err;
  Reader reader(db);
  std::vector<int64_t> captures;
  for (const Capture& c : reader.captures()) captures.push_back(c.id);
  ASSERT_FALSE(captures.empty());
  EXPECT_GT(count_rows(reader.database(), "SELECT count(*) FROM capture_row_ranges"), 0);
  expect_readers_match_filter(db, captures);
}

// The planner keeps the ranges outer and searches the table by rowid range, never scans it.
TEST(RowRanges, TableIsSearchedByRowidRange) {
  test_support::TempDir dir;
  const std::string path = dir.file("host.db");
  write_interleaved(path, 1);
  Reader reader(path);
  const Database& db = reader.database();
  for (const std::string& table : ranged_tables()) {
    Statement s = db.prepare("EXPLAIN QUERY PLAN SELECT *" + capture_rows_sql(db, table, 1));
    std::string plan;
    while (s.step()) plan += s.column_text(3) + "\n";
    EXPECT_NE(plan.find("SEARCH " + table + " USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"),
              std::string::npos)
        << plan;
    EXPECT_EQ(plan.find("SCAN " + table), std::string::npos) << plan;
  }
}

TEST(RowRanges, DeletingACaptureDeletesItsRanges) {
  test_support::TempDir dir;
  const std::string path = dir.file("host.db");
  const std::vector<int64_t> captures = write_interleaved(path);
  {
    Database db = Database::open(path, OpenMode::read_write);
    db.exec("BEGIN");
    delete_capture_rows(db, captures[2]);
    db.exec("COMMIT");
    EXPECT_EQ(count_rows(db, "SELECT count(*) FROM capture_row_ranges WHERE captureId = " +
                                 std::to_string(captures[2])),
              0);
    EXPECT_EQ(count_rows(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE captureId = " +
                                 std::to_string(captures[2])),
              0);
    EXPECT_FALSE(capture_has_rows(db, captures[2]));
  }
  std::vector<int64_t> rest = captures;
  rest.erase(rest.begin() + 2);
  expect_readers_match_filter(path, rest);
}

// An older file: the migration to schema 7 fills the ranges from its rows, on the file itself
// (a read-write open, the daemon's host database) and on a read-only open's migrated copy.
TEST(RowRanges, MigrationFillsRangesOfAnOlderFile) {
  test_support::TempDir dir;
  ::setenv("XDG_CACHE_HOME", dir.file("cache").c_str(), 1);
  for (const bool in_place : {true, false}) {
    const std::string path = dir.file(in_place ? "in_place.db" : "copy.db");
    const std::vector<int64_t> captures = write_interleaved(path);
    // Schema 6 had no capture_row_ranges.
    raw_exec(path,
             "DROP TABLE capture_row_ranges; UPDATE meta SET value = '6' WHERE key = "
             "'schema_version';");
    if (in_place) Database::open(path, OpenMode::read_write);
    Reader reader(path);
    EXPECT_EQ(reader.schema_version(), kSchemaVersion);
    for (int64_t capture : captures)
      for (const std::string& table : ranged_tables())
        EXPECT_TRUE(capture_row_ranges_hold(reader.database(), table, capture)) << table;
    // Maximal runs: a round's batch of a capture is one run per table.
    EXPECT_EQ(count_rows(reader.database(),
                         "SELECT count(*) FROM capture_row_ranges WHERE tbl = 'cpu_ops'"),
              4 * kCaptures);
    expect_readers_match_filter(path, captures);
  }
}

// Rowids changed under the ranges (a VACUUM may renumber a table without an INTEGER PRIMARY
// KEY): readers notice, say so and read by captureId; recomputing the ranges repairs the file.
TEST(RowRanges, ChangedRowidsFallBackToTheCaptureFilter) {
  test_support::TempDir dir;
  const std::string path = dir.file("host.db");
  const std::vector<int64_t> captures = write_interleaved(path);
  // Renumber the kernels in capture order, as a copy of the rows into a fresh table would.
  raw_exec(
      path,
      "CREATE TEMP TABLE k AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY captureId DESC;"
      "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL;"
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM k; VACUUM;");
  {
    Reader reader(path);
    testing::internal::CaptureStderr();
    EXPECT_FALSE(
        capture_row_ranges_hold(reader.database(), "CUPTI_ACTIVITY_KIND_KERNEL", captures[0]));
    const std::string note = testing::internal::GetCapturedStderr();
    EXPECT_NE(note.find("capture_row_ranges"), std::string::npos) << note;
    EXPECT_NE(note.find("VACUUM"), std::string::npos) << note;
  }
  testing::internal::CaptureStderr();
  expect_readers_match_filter(path, captures);
  testing::internal::GetCapturedStderr();
  {
    Database db = Database::open(path, OpenMode::read_write);
    db.exec("BEGIN");
    recompute_capture_row_ranges(db, "CUPTI_ACTIVITY_KIND_KERNEL");
    db.exec("COMMIT");
    for (int64_t capture : captures)
      EXPECT_TRUE(capture_row_ranges_hold(db, "CUPTI_ACTIVITY_KIND_KERNEL", capture));
  }
  expect_readers_match_filter(path, captures);
}

// Ranges that overlap (no writer makes them; a row in both would be read twice) are not used.
TEST(RowRanges, OverlappingRangesFallBackToTheCaptureFilter) {
  test_support::TempDir dir;
  const std::string path = dir.file("host.db");
  const std::vector<int64_t> captures = write_interleaved(path, 1);
  raw_exec(
      path,
      "INSERT INTO capture_row_ranges SELECT tbl, captureId, first_rowid + 1, last_rowid, 0 FROM "
      "capture_row_ranges WHERE tbl = 'CUPTI_ACTIVITY_KIND_KERNEL' AND captureId = " +
          std::to_string(captures[0]));
  Reader reader(path);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(
      capture_row_ranges_hold(reader.database(), "CUPTI_ACTIVITY_KIND_KERNEL", captures[0]));
  EXPECT_NE(testing::internal::GetCapturedStderr().find("ranges overlap"), std::string::npos);
  EXPECT_EQ(by_ranges(reader.database(), "CUPTI_ACTIVITY_KIND_KERNEL", captures[0]),
            by_filter(reader.database(), "CUPTI_ACTIVITY_KIND_KERNEL", captures[0]));
}

// A row appended by plain SQL (not through store::Writer, so in no range) is still read, and a
// row deleted one by one changes the capture's rows key.
TEST(RowRanges, RowsAddedOrDeletedOtherThanByTheWriterAreNotMissed) {
  test_support::TempDir dir;
  const std::string path = dir.file("host.db");
  const std::vector<int64_t> captures = write_interleaved(path, 1);
  const std::string key = capture_rows_key(Reader(path).database(), captures[0]);
  raw_exec(path, "INSERT INTO memory_events(ts, captureId, deviceId, bytes) VALUES (7, " +
                     std::to_string(captures[0]) + ", 0, 4096)");
  testing::internal::CaptureStderr();
  EXPECT_EQ(by_ranges(Reader(path).database(), "memory_events", captures[0]),
            by_filter(Reader(path).database(), "memory_events", captures[0]));
  EXPECT_NE(testing::internal::GetCapturedStderr().find("other than by fleetscope's writer"),
            std::string::npos);
  EXPECT_NE(capture_rows_key(Reader(path).database(), captures[0]), key);
  const std::string cpu_key = capture_rows_key(Reader(path).database(), captures[1]);
  raw_exec(path, "DELETE FROM cpu_ops WHERE captureId = " + std::to_string(captures[1]));
  testing::internal::CaptureStderr();
  EXPECT_NE(capture_rows_key(Reader(path).database(), captures[1]), cpu_key);
  testing::internal::GetCapturedStderr();
}

// The check before a read (a pass over the capture's rows) is made once per table and capture
// while the file is unchanged, and made again after any change: a commit by another connection
// (here a row appended outside the writer, which the check must then see) or a change by this
// connection (which the file's data version does not count).
TEST(RowRanges, ACheckIsReusedWhileTheFileIsUnchangedAndMadeAgainAfterAChange) {
  test_support::TempDir dir;
  const std::string path = dir.file("host.db");
  const std::vector<int64_t> captures = write_interleaved(path, 1);
  const std::string table = "memory_events";
  Database db = Database::open(path, OpenMode::read_write);
  const uint64_t before = capture_range_checks_made();
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(by_ranges(db, table, captures[0]), by_filter(db, table, captures[0]));
  EXPECT_EQ(capture_range_checks_made() - before, 1u);
  (void)by_ranges(db, table, captures[1]);  // another capture: a check of its own
  EXPECT_EQ(capture_range_checks_made() - before, 2u);
  const std::string key = capture_rows_key(db, captures[0]);  // the other tables, checked once
  const uint64_t keyed = capture_range_checks_made();
  EXPECT_EQ(capture_rows_key(db, captures[0]), key);
  EXPECT_EQ(capture_range_checks_made(), keyed);

  raw_exec(path, "INSERT INTO memory_events(ts, captureId, deviceId, bytes) VALUES (7, " +
                     std::to_string(captures[0]) + ", 0, 4096)");
  testing::internal::CaptureStderr();
  const std::vector<int64_t> with_row = by_ranges(db, table, captures[0]);
  EXPECT_FALSE(capture_row_ranges_hold(db, table, captures[0]));
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(with_row, by_filter(db, table, captures[0]));
  EXPECT_EQ(with_row.size(), by_filter(Reader(path).database(), table, captures[0]).size());
  EXPECT_EQ(capture_range_checks_made() - keyed, 1u);

  // This connection deletes that row by a prepared statement: the ranges hold again.
  db.prepare("DELETE FROM memory_events WHERE rowid = ?1").bind(1, with_row.back()).execute();
  EXPECT_TRUE(capture_row_ranges_hold(db, table, captures[0]));
  EXPECT_EQ(capture_range_checks_made() - keyed, 2u);
  EXPECT_EQ(by_ranges(db, table, captures[0]).size(), with_row.size() - 1);
}

// Inside a ReadSnapshot every read sees the file as of the first, and commits by other
// connections meanwhile (the agents streaming into a live host database) cost no new check; once
// it ends, the next read checks again and sees them.
TEST(RowRanges, AReadSnapshotChecksOnceWhileOthersCommit) {
  test_support::TempDir dir;
  const std::string path = dir.file("host.db");
  const std::vector<int64_t> captures = write_interleaved(path, 1);
  raw_exec(path, "PRAGMA journal_mode = WAL");  // the host database's, so others can commit
  const std::string table = "memory_events";
  const std::string capture = std::to_string(captures[0]);
  Database db = Database::open(path);
  const std::vector<int64_t> rows = by_filter(db, table, captures[0]);
  {
    const ReadSnapshot snapshot(db);
    const uint64_t before = capture_range_checks_made();
    EXPECT_EQ(by_ranges(db, table, captures[0]), rows);
    for (int i = 0; i < 3; ++i) {
      raw_exec(path, "INSERT INTO memory_events(ts, captureId, deviceId, bytes) VALUES (7, " +
                         capture + ", 0, 4096)");
      EXPECT_EQ(by_ranges(db, table, captures[0]), rows);
      EXPECT_EQ(by_filter(db, table, captures[0]), rows);
    }
    EXPECT_EQ(capture_range_checks_made() - before, 1u);
  }
  const uint64_t after = capture_range_checks_made();
  testing::internal::CaptureStderr();
  EXPECT_EQ(by_ranges(db, table, captures[0]).size(), rows.size() + 3);
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(capture_range_checks_made() - after, 1u);
  // A snapshot inside a transaction already open is none of its own: it ends nothing.
  db.exec("BEGIN");
  { const ReadSnapshot inner(db); }
  EXPECT_NO_THROW(db.exec("COMMIT"));
}
