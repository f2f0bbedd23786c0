#include "fleetscope/store/reader.h"

#include <sqlite3.h>

#include <algorithm>

#include "fleetscope/store/capture_rows.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/table_io.h"
#include "sqlite_errors.h"

namespace fleetscope::store {
namespace {

using io::TableIo;

// SELECT <the table's columns>, as its description says (table_io.h).
template <class Row>
std::string select_columns() {
  return std::string("SELECT ") + TableIo<Row>::select_columns;
}

// SELECT <the table's columns> FROM <table>.
template <class Row>
std::string select_from() {
  return select_columns<Row>() + " FROM " + TableIo<Row>::table;
}

// Every row the statement yields, read as its table's description says.
template <class Row>
std::vector<Row> read_all(Statement& s) {
  std::vector<Row> out;
  while (s.step()) out.push_back(TableIo<Row>::read(s));
  return out;
}

// Builds "FROM <table> WHERE ..." for an event table and binds it: a capture's rows through
// capture_rows_sql (capture_rows.h; its ?1 is the capture, the other conditions' parameters follow
// it). `time_col`/`end_col` name the time columns; `has_device` says whether deviceId/streamId
// exist.
struct WhereClause {
  std::string sql;
  std::vector<int64_t> args;
};

WhereClause where_for(const Reader& reader, const std::string& table, const EventFilter& f,
                      bool has_device, const char* time_col = "start",
                      const char* end_col = "end") {
  WhereClause w;
  const bool windowed = f.window.begin != INT64_MIN || f.window.end != INT64_MAX;
  std::string sql = " FROM " + table + " WHERE 1=1";
  if (f.captureId) {
    sql = capture_rows_sql(reader.database(), table, *f.captureId, 1,
                           windowed ? CaptureRowsUse::by_time : CaptureRowsUse::rows);
    w.args.push_back(*f.captureId);
  }
  if (has_device && f.deviceId) {
    sql += " AND deviceId = ?";
    w.args.push_back(*f.deviceId);
  }
  if (has_device && f.streamId) {
    sql += " AND streamId = ?";
    w.args.push_back(*f.streamId);
  }
  if (windowed) {
    // Overlap of [start, end) with [begin, end_): start < end_ AND end > begin. The index is on
    // start, so bound start from below too: start >= begin - max_duration.
    int64_t max_duration = 0;
    Statement s = reader.database().prepare(
        std::string("SELECT COALESCE(MAX(max_duration), 0) FROM event_extent WHERE tbl = ?") +
        (f.captureId ? " AND captureId = ?" : ""));
    s.bind(1, table);
    if (f.captureId) s.bind(2, *f.captureId);
    if (s.step()) max_duration = s.column_int(0);
    int64_t lower = f.window.begin == INT64_MIN || f.window.begin < INT64_MIN + max_duration
                        ? INT64_MIN
                        : f.window.begin - max_duration;
    sql += std::string(" AND ") + time_col + " >= ? AND " + time_col + " < ? AND COALESCE(" +
           end_col + ", " + time_col + ") " + (std::string(end_col) == time_col ? ">=" : ">") +
           " ?";
    w.args.push_back(lower);
    w.args.push_back(f.window.end);
    w.args.push_back(f.window.begin);
  }
  w.sql = sql;
  return w;
}

Statement prepare_where(const Database& db, const std::string& head, const WhereClause& w,
                        const std::string& tail) {
  Statement s = db.prepare(head + w.sql + tail);
  int i = 1;
  for (int64_t a : w.args) s.bind(i++, a);
  return s;
}

const char* kEventTables[] = {"CUPTI_ACTIVITY_KIND_KERNEL",
                              "CUPTI_ACTIVITY_KIND_MEMCPY",
                              "CUPTI_ACTIVITY_KIND_MEMSET",
                              "CUPTI_ACTIVITY_KIND_RUNTIME",
                              "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
                              "NVTX_EVENTS",
                              "cpu_ops",
                              "iterations",
                              "memory_events",
                              "device_samples",
                              "external_correlation",
                              "TARGET_INFO_GPU",
                              "findings"};

// Rows of an event table matching `filter`, in `order`.
template <class Row>
std::vector<Row> select_events(const Reader& reader, const EventFilter& filter, bool has_device,
                               const char* order, const char* time_col = "start",
                               const char* end_col = "end") {
  WhereClause w = where_for(reader, TableIo<Row>::table, filter, has_device, time_col, end_col);
  Statement s = prepare_where(reader.database(), select_columns<Row>(), w, order);
  return read_all<Row>(s);
}

// The capture's rows (capture_rows_sql) when a capture is given, else every row.
template <class Row>
std::vector<Row> select_of_capture(const Database& db, std::optional<int64_t> capture_id,
                                   const char* order) {
  Statement s = db.prepare(
      (capture_id ? select_columns<Row>() + capture_rows_sql(db, TableIo<Row>::table, *capture_id)
                  : select_from<Row>()) +
      order);
  if (capture_id) s.bind(1, *capture_id);
  return read_all<Row>(s);
}

}  // namespace

Reader::Reader(const std::string& path) : db_(Database::open(path, OpenMode::read_only)) {}
Reader::Reader(Database db) : db_(std::move(db)) {}

std::vector<Capture> Reader::captures() const {
  Statement s = db_.prepare(select_from<Capture>() + " ORDER BY id");
  return read_all<Capture>(s);
}

std::optional<Capture> Reader::capture(int64_t id) const {
  Statement s = db_.prepare(select_from<Capture>() + " WHERE id = ?");
  s.bind(1, id);
  if (s.step()) return TableIo<Capture>::read(s);
  return std::nullopt;
}

std::vector<GpuInfo> Reader::gpus(std::optional<int64_t> capture_id) const {
  return select_of_capture<GpuInfo>(db_, capture_id, " ORDER BY captureId, id");
}

std::vector<Process> Reader::processes(std::optional<int64_t> capture_id) const {
  Statement s = db_.prepare(select_from<Process>() + " ORDER BY captureId, globalPid");
  std::vector<Process> out = read_all<Process>(s);
  return capture_id ? processes_of(out, *capture_id) : out;
}

std::vector<Process> processes_of(const std::vector<Process>& processes, int64_t capture_id) {
  std::vector<Process> out;
  for (const Process& p : processes)
    if (p.captureId == capture_id) out.push_back(p);
  // Rows migrated from schema 2 (captureId NULL) stand for every capture, for the pids the
  // capture has no row of its own for.
  for (const Process& p : processes) {
    if (p.captureId) continue;
    const bool own = std::any_of(out.begin(), out.end(), [&](const Process& q) {
      return q.captureId && q.globalPid == p.globalPid;
    });
    if (!own) out.push_back(p);
  }
  return out;
}

std::vector<Workflow> Reader::workflows() const {
  Statement s = db_.prepare(select_from<Workflow>() + " ORDER BY id");
  return read_all<Workflow>(s);
}

std::vector<Host> Reader::hosts() const {
  Statement s = db_.prepare(select_from<Host>() + " ORDER BY id");
  return read_all<Host>(s);
}

std::vector<Kernel> Reader::kernels(const EventFilter& filter) const {
  return select_events<Kernel>(*this, filter, true, " ORDER BY start");
}

void Reader::for_each_kernel(const EventFilter& filter,
                             const std::function<void(const Kernel&)>& fn) const {
  WhereClause w = where_for(*this, TableIo<Kernel>::table, filter, true);
  Statement s = prepare_where(db_, select_columns<Kernel>(), w, " ORDER BY start");
  while (s.step()) fn(TableIo<Kernel>::read(s));
}

std::vector<Memcpy> Reader::memcpys(const EventFilter& filter) const {
  return select_events<Memcpy>(*this, filter, true, " ORDER BY start");
}

std::vector<Memset> Reader::memsets(const EventFilter& filter) const {
  return select_events<Memset>(*this, filter, true, " ORDER BY start");
}

std::vector<RuntimeCall> Reader::runtime_calls(const EventFilter& filter) const {
  return select_events<RuntimeCall>(*this, filter, false, " ORDER BY start");
}

std::vector<Sync> Reader::syncs(const EventFilter& filter) const {
  return select_events<Sync>(*this, filter, true, " ORDER BY start");
}

std::vector<NvtxEvent> Reader::nvtx_events(const EventFilter& filter) const {
  return select_events<NvtxEvent>(*this, filter, false, " ORDER BY start");
}

std::vector<CpuOp> Reader::cpu_ops(const EventFilter& filter) const {
  return select_events<CpuOp>(*this, filter, false, " ORDER BY start");
}

std::vector<Iteration> Reader::iterations(std::optional<int64_t> capture_id) const {
  // Ties (same start) in the order the rows were written, so every reader sees one order.
  return select_of_capture<Iteration>(db_, capture_id, " ORDER BY captureId, start, rowid");
}

std::vector<MemoryEvent> Reader::memory_events(const EventFilter& filter) const {
  EventFilter f = filter;
  f.streamId.reset();
  // Ties in the order written.
  return select_events<MemoryEvent>(*this, f, true, " ORDER BY ts, memory_events.rowid", "ts",
                                    "ts");
}

std::vector<DeviceSample> Reader::device_samples(const EventFilter& filter) const {
  EventFilter f = filter;
  f.streamId.reset();
  return select_events<DeviceSample>(*this, f, true, " ORDER BY ts", "ts", "ts");
}

std::vector<ExternalCorrelation> Reader::external_correlations(
    std::optional<int64_t> capture_id) const {
  return select_of_capture<ExternalCorrelation>(db_, capture_id,
                                                " ORDER BY external_correlation.rowid");
}

std::vector<Finding> Reader::findings(std::optional<int64_t> capture_id) const {
  return select_of_capture<Finding>(db_, capture_id, " ORDER BY impact_ns DESC, id");
}

template <class Row>
std::vector<Row> Reader::rows_of(int64_t capture_id) const {
  return select_of_capture<Row>(
      db_, capture_id, (std::string(" ORDER BY ") + TableIo<Row>::table + ".rowid").c_str());
}
#define FLEETSCOPE_READER_ROWS_OF(Row, plural) \
  template std::vector<Row> Reader::rows_of<Row>(int64_t) const;
FLEETSCOPE_EVENT_ROWS(FLEETSCOPE_READER_ROWS_OF)
#undef FLEETSCOPE_READER_ROWS_OF

const std::unordered_map<int64_t, std::string>& Reader::strings() const {
  if (!strings_) {
    strings_.emplace();
    Statement s = db_.prepare("SELECT id, value FROM StringIds");
    while (s.step()) strings_->emplace(s.column_int(0), s.column_text(1));
  }
  return *strings_;
}

const std::string& Reader::string(int64_t id) const {
  static const std::string empty;
  const auto& all = strings();
  auto it = all.find(id);
  return it == all.end() ? empty : it->second;
}

std::vector<TableCount> Reader::counts(std::optional<int64_t> capture_id) const {
  std::vector<TableCount> out;
  for (const char* table : kEventTables) {
    Statement s = db_.prepare(
        std::string("SELECT COUNT(*)") +
        (capture_id ? capture_rows_sql(db_, table, *capture_id) : std::string(" FROM ") + table));
    if (capture_id) s.bind(1, *capture_id);
    out.push_back({table, s.step() ? s.column_int(0) : 0});
  }
  return out;
}

QueryResult Reader::query(const std::string& sql) const {
  QueryResult result;
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  if (sqlite3_prepare_v2(db_.raw(), sql.c_str(), -1, &raw, &tail) != SQLITE_OK) {
    std::string message = sqlite3_errmsg(db_.raw());
    sqlite3_finalize(raw);
    throw InputError(db_.path(), "query", message);
  }
  if (!raw) return result;  // empty statement
  if (!sqlite3_stmt_readonly(raw)) {
    sqlite3_finalize(raw);
    throw InputError(db_.path(), "query", "only read-only statements are allowed");
  }
  int columns = sqlite3_column_count(raw);
  for (int c = 0; c < columns; ++c) result.columns.push_back(sqlite3_column_name(raw, c));
  int rc;
  while ((rc = sqlite3_step(raw)) == SQLITE_ROW) {
    std::vector<std::optional<std::string>> row;
    for (int c = 0; c < columns; ++c) {
      const unsigned char* text = sqlite3_column_text(raw, c);
      if (column_text_failed(raw, c, text)) {
        const std::string message = sqlite_error_message(db_.raw());
        sqlite3_finalize(raw);
        throw InputError(db_.path(), "query", message);
      }
      if (text)
        row.emplace_back(reinterpret_cast<const char*>(text));
      else
        row.emplace_back(std::nullopt);
    }
    result.rows.push_back(std::move(row));
  }
  std::string message = sqlite_error_message(db_.raw());
  sqlite3_finalize(raw);
  if (rc != SQLITE_DONE) throw InputError(db_.path(), "query", message);
  return result;
}

}  // namespace fleetscope::store
