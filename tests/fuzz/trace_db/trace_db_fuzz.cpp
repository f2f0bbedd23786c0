// Fuzz target: trace databases as planted files. Each input is a list of edits applied to a small
// valid trace database (values of any type or size in any column, rows added or removed, a table
// replaced by an endless view, a trigger, a column retyped, a table dropped, the schema version
// changed), then every reader runs on the result: the store's open, the analyzer's load and
// rules, the Chrome-trace export and the timeline summary. A file must end in fleetscope::Error
// (naming it) or be read; anything else - another exception, a crash, a sanitizer report, or a
// hang (libFuzzer's -timeout) - is a finding.
#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "../fuzz_input_file.h"
#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/export/chrome_trace.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/read_policy.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"
#include "fleetscope/timeline/timeline_data.h"

namespace {

using namespace fleetscope;

// The tables the edits choose from (the ones the readers read).
const char* const kTables[] = {"CUPTI_ACTIVITY_KIND_KERNEL",
                               "CUPTI_ACTIVITY_KIND_MEMCPY",
                               "CUPTI_ACTIVITY_KIND_RUNTIME",
                               "StringIds",
                               "captures",
                               "processes",
                               "iterations",
                               "meta",
                               "TARGET_INFO_GPU",
                               "memory_events",
                               "device_samples",
                               "NVTX_EVENTS"};

const std::string& base_database() {
  static const std::string path = [] {
    const std::string file = fuzz::input_path(".base.db");
    std::filesystem::remove(file);
    store::Writer w(store::Database::create(file));
    const int64_t cap = w.add_capture({.source = "kineto-json",
                                       .source_path = "x.json",
                                       .start_ns = 1000,
                                       .end_ns = 10'000'000,
                                       .gpu_vendor = "nvidia"});
    w.add_gpu({.id = 0, .captureId = cap, .name = "GPU", .smCount = 108});
    for (int i = 0; i < 6; ++i) {
      store::RuntimeCall c;
      c.start = 1000 + i * 10'000, c.end = c.start + 2000, c.correlationId = i + 1;
      c.name = "cudaLaunchKernel", c.captureId = cap, c.globalTid = store::global_tid(7, 7);
      w.add(c);
      store::Kernel k;
      k.start = c.start + 5000, k.end = k.start + 3000, k.streamId = 7, k.correlationId = i + 1;
      k.demangledName = "kernel_" + std::to_string(i % 3), k.captureId = cap;
      w.add(k);
    }
    w.finish();
    return file;
  }();
  return path;
}

// When the edit statement now running must stop (see LLVMFuzzerTestOneInput).
std::chrono::steady_clock::time_point edit_deadline;

class Edits {
 public:
  Edits(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool more() const { return at_ < size_; }
  uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
  int64_t number() {
    int64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | byte();
    return v;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

std::vector<std::string> columns_of(sqlite3* db, const std::string& table) {
  std::vector<std::string> columns;
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, ("SELECT name FROM pragma_table_info('" + table + "')").c_str(), -1, &s,
                     nullptr);
  while (s && sqlite3_step(s) == SQLITE_ROW)
    columns.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
  sqlite3_finalize(s);
  return columns;
}

// A value of a kind the input picks: small or huge integers, reals, text, blobs, NULL.
std::string value(Edits& in) {
  switch (in.byte() % 8) {
    case 0:
      return std::to_string(static_cast<int8_t>(in.byte()));
    case 1:
      return std::to_string(in.number());
    case 2:
      return "1e300";
    case 3:
      return "'" + std::string(in.byte() % 16, 'x') + "'";
    case 4:
      return "x'" + std::string(2 * (in.byte() % 8), 'a') + "'";
    case 5:
      return "NULL";
    case 6:
      return std::to_string(static_cast<double>(in.number()) / 7.0);
    default:
      return "printf('%.*c', " + std::to_string(in.byte() * 4096) + ", 'y')";
  }
}

void apply(sqlite3* db, Edits& in) {
  const std::string table = kTables[in.byte() % (sizeof kTables / sizeof *kTables)];
  const auto columns = columns_of(db, table);
  std::string sql;
  switch (in.byte() % 9) {
    case 0:
    case 1:
      if (columns.empty()) return;
      sql = "UPDATE " + table + " SET " + columns[in.byte() % columns.size()] + " = " + value(in) +
            " WHERE rowid IN (SELECT rowid FROM " + table + " LIMIT 1 OFFSET " +
            std::to_string(in.byte() % 8) + ")";
      break;
    case 2: {
      if (columns.empty()) return;
      std::string values;
      for (size_t c = 0; c < columns.size(); ++c) values += (c ? ", " : "") + value(in);
      sql = "INSERT OR IGNORE INTO " + table + " VALUES (" + values + ")";
      break;
    }
    case 3:
      sql = "DELETE FROM " + table + " WHERE rowid % 3 = " + std::to_string(in.byte() % 3);
      break;
    case 4:  // an endless view in the table's place
      sql = "DROP TABLE IF EXISTS " + table + "; CREATE VIEW " + table +
            " AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n AS "
            "start, n AS end, n AS deviceId, n AS streamId, 1 AS captureId, n AS value, n AS "
            "id FROM r";
      break;
    case 5:
      sql = "CREATE TRIGGER IF NOT EXISTS t" + std::to_string(in.byte()) + " AFTER INSERT ON " +
            table + " BEGIN SELECT 1; END";
      break;
    case 6:  // the first column retyped
      if (columns.empty()) return;
      sql = "CREATE TABLE fuzz_copy AS SELECT * FROM " + table + "; DROP TABLE " + table +
            "; CREATE TABLE " + table + "(" + columns[0] + " BLOB); DROP TABLE fuzz_copy";
      break;
    case 7:
      sql = "DROP TABLE IF EXISTS " + table;
      break;
    default:
      sql = "UPDATE meta SET value = " + value(in) + " WHERE key = 'schema_version'";
      break;
  }
  edit_deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(250);
  sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::input_path(".db");
  std::error_code ignored;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    std::filesystem::remove(path + suffix, ignored);
  std::filesystem::copy_file(base_database(), path, ignored);
  {
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    // The edits themselves must end: copying a table that an earlier edit replaced by the endless
    // view never finishes, and 16 edits each rewriting megabyte strings take minutes under the
    // sanitizers (harness hangs, not findings: the first two runs timed out inside these edits). A
    // count of VM steps does not bound the time (one step can copy a megabyte), so each edit
    // statement gets a quarter of a second of wall time.
    sqlite3_progress_handler(
        db, 100, [](void*) { return std::chrono::steady_clock::now() > edit_deadline ? 1 : 0; },
        nullptr);
    Edits in(data, size);
    for (int n = 0; in.more() && n < 16; ++n) apply(db, in);
    sqlite3_close(db);
  }
  // A planted file may be slow to read, never endless: a short budget for this input.
  store::set_read_time_limit(2.0);
  try {
    store::Reader reader(path);
    for (const auto& capture : reader.captures()) {
      const analyzer::CaptureData loaded = analyzer::load_capture(reader, capture.id);
      (void)analyzer::analyze_capture(loaded);
      (void)timeline::load_timeline(reader, capture.id);
    }
    (void)exporter::export_chrome(reader, path + ".json");
  } catch (const Error&) {
  }
  store::set_read_time_limit(0);
  return 0;
}
