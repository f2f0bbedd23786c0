// The export maps columns by the table description generated from schema/tables.py
// (fleetscope/store/table_columns.h), not by hand. These tests are driven by that description:
// every column of every exported table is filled with a value of its own, and each one the
// description marks as an arg must come out under its arg name with that value. A column added
// to tables.py is covered (and exported) with no edit to the exporter or to this test.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "export_test_support.h"
#include "fleetscope/export/chrome_trace.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/table_columns.h"

namespace fleetscope::exporter {
namespace {

using nlohmann::json;
using testing::read_json;
using testing::ScratchDir;
namespace columns = store::table_columns;

// The value a column gets: distinct per column, inside the column's range, times in order.
struct Filled {
  int64_t integer = 0;
  double real = 0;
  std::string text;
};

Filled value_for(const columns::Table& table, size_t index) {
  const columns::Column& c = table.columns[index];
  Filled v;
  const auto i = static_cast<int64_t>(index);
  if (c.name == "captureId")
    v.integer = 1;  // the exported capture
  else if (!c.labels.empty())
    v.integer = 1;  // a value every enum labels
  else if (c.time)
    v.integer = 1'000'000 + 1000 * i;  // start before end: columns are in order
  else if (c.kind == columns::Kind::string_id)
    v.integer = 500 + i;
  else
    v.integer = 100 + i;
  v.real = 0.25 + static_cast<double>(i);
  v.text = "text of " + std::string(c.name);
  if (c.kind == columns::Kind::string_id) v.text = "string " + std::string(c.name);
  return v;
}

// One row in every exported table, every column set, through the description alone.
void fill_every_column(store::Database& db) {
  db.exec("INSERT INTO captures (id, kind, source) VALUES (1, 'imported', 'table_columns_test')");
  for (const columns::Table& table : columns::kTables) {
    if (!table.chrome) continue;
    std::string names, params;
    for (size_t i = 0; i < table.columns.size(); ++i) {
      names += (i ? ", \"" : "\"") + std::string(table.columns[i].name) + "\"";
      params += i ? ", ?" : "?";
    }
    store::Statement insert = db.prepare("INSERT INTO " + std::string(table.name) + " (" + names +
                                         ") VALUES (" + params + ")");
    for (size_t i = 0; i < table.columns.size(); ++i) {
      const Filled v = value_for(table, i);
      const int param = static_cast<int>(i) + 1;
      switch (table.columns[i].kind) {
        case columns::Kind::integer:
          insert.bind(param, v.integer);
          break;
        case columns::Kind::real:
          insert.bind(param, v.real);
          break;
        case columns::Kind::text:
          insert.bind(param, v.text);
          break;
        case columns::Kind::string_id: {
          store::Statement string = db.prepare("INSERT OR IGNORE INTO StringIds VALUES (?, ?)");
          string.bind(1, v.integer).bind(2, v.text).execute();
          insert.bind(param, v.integer);
          break;
        }
      }
    }
    insert.execute();
  }
}

// The exported object that carries `table`'s row (the event, or the GPU's deviceProperties).
json object_of(const json& trace, const std::string& table) {
  if (table == "TARGET_INFO_GPU") return trace.at("deviceProperties").at(0);
  static const std::map<std::string, std::string> kCategory = {
      {"CUPTI_ACTIVITY_KIND_KERNEL", "kernel"},
      {"CUPTI_ACTIVITY_KIND_MEMCPY", "gpu_memcpy"},
      {"CUPTI_ACTIVITY_KIND_MEMSET", "gpu_memset"},
      {"CUPTI_ACTIVITY_KIND_RUNTIME", "cuda_runtime"},
      {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "cuda_sync"},
      {"NVTX_EVENTS", "nvtx"},
      {"cpu_ops", "text of category"},
      {"iterations", "iteration"},
      {"memory_events", "cpu_instant_event"},
      {"device_samples", "device_sample"}};
  auto category = kCategory.find(table);
  if (category == kCategory.end())
    ADD_FAILURE() << "the test does not know how " << table << " is exported: add it to kCategory";
  for (const json& event : trace.at("traceEvents"))
    if (category != kCategory.end() && event.value("cat", "") == category->second)
      return event.contains("args") ? event.at("args") : json::object();
  ADD_FAILURE() << "no event of table " << table;
  return json::object();
}

TEST(ChromeExportColumns, EveryDescribedColumnReachesTheExport) {
  ScratchDir dir;
  const std::string path = dir.file("every_column.db");
  {
    store::Database db = store::Database::create(path);
    fill_every_column(db);
  }
  store::Reader reader(path);
  ChromeExportOptions options;
  options.capture_id = 1;
  export_chrome(reader, dir.file("every_column.json"), options);
  const json trace = read_json(dir.file("every_column.json"));

  int checked = 0;
  for (const columns::Table& table : columns::kTables) {
    if (!table.chrome) continue;
    const json args = object_of(trace, std::string(table.name));
    for (size_t i = 0; i < table.columns.size(); ++i) {
      const columns::Column& c = table.columns[i];
      if (c.chrome != columns::Chrome::arg) continue;
      SCOPED_TRACE(std::string(table.name) + "." + std::string(c.name));
      const std::string key(c.chrome_arg);
      ASSERT_TRUE(args.contains(key)) << args.dump();
      // Columns sharing an arg name form an array, in column order.
      json value = args.at(key);
      if (value.is_array()) {
        size_t first = i;
        while (first > 0 && table.columns[first - 1].chrome_arg == c.chrome_arg) --first;
        value = value.at(i - first);
      }
      const Filled expected = value_for(table, i);
      if (!c.labels.empty()) {
        EXPECT_TRUE(value.is_string()) << "an enum column shows its label: " << value;
      } else if (c.kind == columns::Kind::integer) {
        EXPECT_EQ(value, expected.integer);
      } else if (c.kind == columns::Kind::real) {
        EXPECT_DOUBLE_EQ(value.get<double>(), expected.real);
      } else {
        EXPECT_EQ(value, expected.text);  // text, and StringIds ids resolved to their text
      }
      ++checked;
    }
  }
  // The kernel alone exports more than twenty of its columns; a description that lost its
  // Chrome names would check nothing.
  EXPECT_GT(checked, 60);
}

// The schema-4 column that tables.py added in one place (kernel gridId) is in the export under
// its own name: it has no line in the exporter.
TEST(ChromeExportColumns, TheColumnAddedInOnePlaceIsExported) {
  constexpr const columns::Table& kernel = columns::table("CUPTI_ACTIVITY_KIND_KERNEL");
  const columns::Column* grid_id = kernel.find("gridId");
  ASSERT_NE(grid_id, nullptr);
  EXPECT_EQ(grid_id->chrome, columns::Chrome::arg);
  EXPECT_EQ(grid_id->chrome_arg, "gridId");

  ScratchDir dir;
  const std::string path = dir.file("grid_id.db");
  {
    store::Database db = store::Database::create(path);
    fill_every_column(db);
  }
  store::Reader reader(path);
  export_chrome(reader, dir.file("grid_id.json"));
  const json trace = read_json(dir.file("grid_id.json"));
  const json args = object_of(trace, "CUPTI_ACTIVITY_KIND_KERNEL");
  EXPECT_EQ(args.at("gridId"),
            value_for(kernel, static_cast<size_t>(kernel.index("gridId"))).integer);
}

// Out-of-range values are refused before any narrowing cast, as `analyze` refuses them, with the
// file, table, row and column named; no output file is left behind.
struct BadValue {
  const char* table;
  const char* column;
  const char* value;  // SQL literal
  const char* expected;
};

class ChromeExportRefuses : public ::testing::TestWithParam<BadValue> {};

TEST_P(ChromeExportRefuses, AValueOutsideItsColumnsRange) {
  const BadValue bad = GetParam();
  ScratchDir dir;
  const std::string path = dir.file("bad.db");
  {
    store::Database db = store::Database::create(path);
    fill_every_column(db);
    db.exec(std::string("UPDATE ") + bad.table + " SET \"" + bad.column + "\" = " + bad.value);
  }
  store::Reader reader(path);
  const std::string out = dir.file("bad.json");
  try {
    export_chrome(reader, out);
    FAIL() << "exported a database with " << bad.table << "." << bad.column << " = " << bad.value;
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(std::string("table ") + bad.table), std::string::npos) << message;
    EXPECT_NE(message.find(std::string("column ") + bad.column), std::string::npos) << message;
    EXPECT_NE(message.find(bad.expected), std::string::npos) << message;
  }
  EXPECT_FALSE(std::filesystem::exists(out));
}

INSTANTIATE_TEST_SUITE_P(
    Narrowing, ChromeExportRefuses,
    ::testing::Values(
        // An int32 column holding 2^40 would be written as 0 after the cast.
        BadValue{"CUPTI_ACTIVITY_KIND_KERNEL", "deviceId", "1099511627776", "out of range"},
        BadValue{"CUPTI_ACTIVITY_KIND_KERNEL", "registersPerThread", "-3000000000", "out of range"},
        BadValue{"CUPTI_ACTIVITY_KIND_MEMCPY", "copyKind", "4294967297", "out of range"},
        BadValue{"memory_events", "deviceId", "2147483648", "out of range"},
        // A real or text where an integer belongs.
        BadValue{"CUPTI_ACTIVITY_KIND_MEMSET", "bytes", "1e300", "real number"},
        BadValue{"cpu_ops", "externalId", "'seven'", "is text"},
        // A time beyond +-2^62 ns.
        BadValue{"CUPTI_ACTIVITY_KIND_RUNTIME", "end", "9223372036854775807", "out of range"},
        // A REAL column holding text.
        BadValue{"CUPTI_ACTIVITY_KIND_KERNEL", "estOccupancy", "'high'", "expected a number"}));

}  // namespace
}  // namespace fleetscope::exporter
