// The host database selects a capture's rows by the ranges its bulk writer records
// (capture_row_ranges, store/capture_rows.h), not by per-capture indexes: it keeps none on its
// event tables (HostStore::apply_live_indexes drops an older daemon's), and windows streamed in
// turn read back exactly the rows the plain captureId filter finds.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fleetscope/daemon/host_store.h"
#include "fleetscope/store/capture_rows.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"
#include "temp_dir.h"

using namespace fleetscope;
using namespace fleetscope::daemon;

namespace {

std::vector<int64_t> rowids(const store::Database& db, const std::string& sql, int64_t capture) {
  std::vector<int64_t> out;
  auto s = db.prepare(sql);
  s.bind(1, capture);
  while (s.step()) out.push_back(s.column_int(0));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> indexes_of_event_tables(const store::Database& db) {
  std::vector<std::string> out;
  auto s = db.prepare(
      "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL");
  while (s.step())
    if (store::has_row_ranges(s.column_text(1))) out.push_back(s.column_text(0));
  return out;
}

}  // namespace

TEST(HostRowRanges, WindowsStreamedInTurnReadBackByTheirRanges) {
  test_support::TempDir dir;
  const std::string path = dir.file("host.db");
  std::vector<int64_t> captures;
  {
    HostStore store(path, "node");
    for (int c = 0; c < 8; ++c) captures.push_back(store.open_capture("job", 1000));
    for (int round = 0; round < 3; ++round)
      for (int64_t id : captures) {
        rpc::RecordBatch batch;
        batch.capture_id = id;
        batch.sequence = round;
        rpc::KernelRecord k;
        k.start_ns = 1000 * (round + 1) + id;
        k.end_ns = k.start_ns + 10;
        k.demangledName = "k";
        batch.kernels.assign(static_cast<size_t>(100 + id), k);
        rpc::CpuOpRecord op;
        op.start_ns = k.start_ns;
        op.end_ns = k.end_ns;
        op.name = "aten::mm";
        op.category = "cpu_op";
        batch.cpu_ops.assign(7, op);
        store.wait_committed(store.add_batch(std::move(batch), id).ticket);
      }
    for (int64_t id : captures) store.close_capture(id, 5000, 0, 0, std::nullopt);
  }
  store::Reader reader(path);
  const store::Database& db = reader.database();
  EXPECT_EQ(indexes_of_event_tables(db), std::vector<std::string>{});
  for (int64_t id : captures)
    for (const std::string table : {"CUPTI_ACTIVITY_KIND_KERNEL", "cpu_ops"}) {
      SCOPED_TRACE(table + " capture " + std::to_string(id));
      EXPECT_TRUE(store::capture_row_ranges_hold(db, table, id));
      const auto by_ranges =
          rowids(db, "SELECT " + table + ".rowid" + store::capture_rows_sql(db, table, id), id);
      EXPECT_EQ(by_ranges.size(), table == "cpu_ops" ? 21u : static_cast<size_t>(3 * (100 + id)));
      EXPECT_EQ(by_ranges, rowids(db, "SELECT rowid FROM " + table + " WHERE captureId = ?1", id));
    }
}

TEST(HostRowRanges, AnOlderDaemonsIndexesOnEventTablesAreDropped) {
  test_support::TempDir dir;
  const std::string path = dir.file("host.db");
  {
    // A file whose every index was built (an older daemon's shutdown, or a one-shot file).
    store::Writer writer(store::Database::create(path));
    writer.add_capture({.source = "old"});
    writer.finish();
  }
  ASSERT_FALSE(indexes_of_event_tables(store::Reader(path).database()).empty());
  { HostStore store(path, "node"); }
  store::Reader reader(path);
  EXPECT_EQ(indexes_of_event_tables(reader.database()), std::vector<std::string>{});
  // The catalog's per-capture index stays.
  auto s = reader.database().prepare(
      "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'findings_by_capture'");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.column_int(0), 1);
}
