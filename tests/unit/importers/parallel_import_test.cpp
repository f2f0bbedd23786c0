// import_files() with several files imports them concurrently (ImportOptions::parallel_files):
// the database must hold exactly the serial import's rows — the same captures in file order, the
// same hosts/workflows/processes/GPUs, the same event rows (string ids resolved to their text,
// since interning order follows arrival) — and a bad file still fails the whole import with that
// file's error and leaves no output.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "fleetscope/importers/import_command.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/reader.h"
#include "importer_test_util.h"

namespace fleetscope::importers::test {
namespace {

// Columns holding StringIds ids (schema/tables.py), resolved to their text for comparison.
bool is_string_id(const std::string& column) {
  return column == "demangledName" || column == "shortName" || column == "mangledName" ||
         column == "nameId" || column == "textId" || column == "metric_id";
}

// Every table's rows as sorted text lines.
std::map<std::string, std::vector<std::string>> dump(const std::string& db_path) {
  const store::Reader reader(db_path);
  const auto& db = reader.database();
  std::map<int64_t, std::string> strings;
  {
    auto s = db.prepare("SELECT id, value FROM StringIds");
    while (s.step()) strings[s.column_int(0)] = s.column_text(1);
  }
  std::vector<std::string> tables;
  {
    auto s = db.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND "
        "name NOT IN ('StringIds', 'meta')");
    while (s.step()) tables.push_back(s.column_text(0));
  }
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& table : tables) {
    // Where a capture's rows lie differs with the order the files' rows were committed in (their
    // rowids); how many rows of each capture each table's ranges hold does not.
    auto s = db.prepare(table == "capture_row_ranges"
                            ? "SELECT tbl, captureId, total(rows) FROM capture_row_ranges GROUP BY "
                              "tbl, captureId"
                            : "SELECT * FROM \"" + table + "\"");
    auto& rows = out[table];
    while (s.step()) {
      std::string line;
      for (int c = 0; c < sqlite3_column_count(s.raw()); ++c) {
        const std::string column = sqlite3_column_name(s.raw(), c);
        if (s.column_is_null(c))
          line += "NULL";
        else if (is_string_id(column))
          line += "'" + strings[s.column_int(c)] + "'";
        else
          line += s.column_text(c);
        line += "|";
      }
      rows.push_back(line);
    }
    std::sort(rows.begin(), rows.end());
  }
  return out;
}

std::vector<std::string> some_traces() {
  return {kineto_dir() + "/hta-nccl_parser_config_nccl_data.json.gz",
          kineto_dir() + "/hta-critical_path_alexnet_trace.json.gz",
          kineto_dir() + "/hta-ns_resolution_trace_rank-0.json.gz",
          kineto_dir() + "/hta-amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"};
}

TEST(ParallelImport, SameRowsAsTheSerialImport) {
  ASSERT_TRUE(fs::exists(kineto_dir())) << "shared reference data missing: " << kineto_dir();
  ScratchDir dir;
  ImportOptions serial, parallel;
  serial.parallel_files = 1;
  parallel.parallel_files = 3;  // more threads than this machine may have cores: still the same
  const auto a = import_files(some_traces(), dir.file("serial.db"), serial);
  const auto b = import_files(some_traces(), dir.file("parallel.db"), parallel);
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].capture_id, b[i].capture_id);
    EXPECT_EQ(a[i].kernels, b[i].kernels);
    EXPECT_EQ(a[i].cpu_ops, b[i].cpu_ops);
    EXPECT_EQ(summary_line(a[i]), summary_line(b[i]));
  }
  const auto serial_rows = dump(dir.file("serial.db"));
  const auto parallel_rows = dump(dir.file("parallel.db"));
  ASSERT_EQ(serial_rows.size(), parallel_rows.size());
  size_t compared = 0;
  for (const auto& [table, rows] : serial_rows) {
    SCOPED_TRACE(table);
    ASSERT_EQ(parallel_rows.count(table), 1u);
    EXPECT_EQ(rows.size(), parallel_rows.at(table).size());
    EXPECT_TRUE(rows == parallel_rows.at(table));
    compared += rows.size();
  }
  EXPECT_GT(compared, 50000u);
}

TEST(ParallelImport, ABadFileFailsTheWholeImportWithItsOwnError) {
  ASSERT_TRUE(fs::exists(kineto_dir())) << "shared reference data missing: " << kineto_dir();
  ScratchDir dir;
  const std::string bad = dir.write("bad.json", R"({"traceEvents": [{"ph": "X", "ts": "x"}]})");
  auto files = some_traces();
  files.insert(files.begin() + 1, bad);
  ImportOptions parallel;
  parallel.parallel_files = 3;
  try {
    import_files(files, dir.file("out.db"), parallel);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(bad, 0), 0u) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir.file("out.db")));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"bad.json"});
}

TEST(ParallelImport, JobsFlag) {
  ASSERT_TRUE(fs::exists(kineto_dir())) << "shared reference data missing: " << kineto_dir();
  ScratchDir dir;
  const std::string a = kineto_dir() + "/hta-critical_path_alexnet_trace.json.gz";
  const std::string b = kineto_dir() + "/hta-triton_example_triton_example.json.gz";
  std::ostringstream out, err;
  EXPECT_EQ(run_import_command({a, b, "-o", dir.file("one.db"), "--jobs", "1"}, out, err), 0)
      << err.str();
  EXPECT_EQ(run_import_command({a, b, "-o", dir.file("two.db"), "--jobs", "2"}, out, err), 0)
      << err.str();
  EXPECT_EQ(dump(dir.file("one.db")), dump(dir.file("two.db")));
  std::ostringstream out2, err2;
  EXPECT_EQ(run_import_command({a, "-o", dir.file("bad.db"), "--jobs", "-3"}, out2, err2), 2);
  EXPECT_NE(err2.str().find("--jobs -3"), std::string::npos) << err2.str();
  EXPECT_FALSE(fs::exists(dir.file("bad.db")));
}

}  // namespace
}  // namespace fleetscope::importers::test
