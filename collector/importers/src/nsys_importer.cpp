// Nsight Systems SQLite export (`nsys export --type sqlite`) → trace store. Our core tables carry
// the nsys table and column names, so this is mostly a copy with StringIds ids resolved to text
// (the writer re-interns them) and a captureId added: the copy is generated from the tables'
// description (fleetscope/store/nsys_columns.h, from schema/tables.py), so a new column nsys also
// exports needs no line here. Tables nsys leaves out when empty are
// optional; StringIds and at least one activity table are required. Columns are looked up by
// name (nsys versions add and drop columns), required ones are checked with a clear error.
//
// The export is a foreign, read-only input, not a fleetscope trace database, so it is opened here
// with sqlite3 directly (read-only, no migration) rather than through store::Database.
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>
#include <unordered_map>

#include "fleetscope/importers/importers.h"
#include "fleetscope/store/nsys_columns.h"
#include "import_util.h"

namespace fleetscope::importers {

namespace {

class NsysFile {
 public:
  // The store opens the file (it is the only code that opens databases); this class only reads.
  explicit NsysFile(const std::string& path)
      : path_(path), database_(store::Database::open_external(path)), db_(database_.raw()) {
    // Reading the schema is the first access that touches the file's pages: a corrupt file fails
    // here.
    for_each("SELECT name FROM sqlite_master WHERE type IN ('table','view')", "sqlite_master",
             [&](sqlite3_stmt* st) { tables_.insert(text(st, 0)); });
  }
  NsysFile(const NsysFile&) = delete;
  NsysFile& operator=(const NsysFile&) = delete;

  bool has_table(const std::string& t) const { return tables_.count(t) > 0; }
  const std::string& path() const { return path_; }

  std::set<std::string> columns(const std::string& table) {
    std::set<std::string> cols;
    for_each("PRAGMA table_info(\"" + table + "\")", table,
             [&](sqlite3_stmt* st) { cols.insert(text(st, 1)); });
    return cols;
  }

  template <class Fn>
  void for_each(const std::string& sql, const std::string& table, Fn&& fn) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) fail(table);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      try {
        fn(st);
      } catch (...) {
        sqlite3_finalize(st);
        throw;
      }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) fail(table);
  }

  [[noreturn]] void fail(const std::string& table) const {
    throw InputError(path_, "table " + table, std::string("cannot read: ") + sqlite3_errmsg(db_));
  }

  static std::string text(sqlite3_stmt* st, int col) {
    const unsigned char* t = sqlite3_column_text(st, col);
    return t ? reinterpret_cast<const char*>(t) : "";
  }

 private:
  std::string path_;
  store::Database database_;
  sqlite3* db_ = nullptr;
  std::set<std::string> tables_;
};

// A SELECT over the columns a table has; missing optional columns read as NULL.
struct Query {
  std::string sql;
  std::map<std::string, int> index;
};

Query build_query(NsysFile& f, const std::string& table, const std::vector<std::string>& required,
                  const std::vector<std::string>& optional) {
  std::set<std::string> have = f.columns(table);
  Query q;
  q.sql = "SELECT rowid";
  int col = 1;
  for (const auto& c : required) {
    if (!have.count(c))
      throw InputError(f.path(), "table " + table, "missing required column '" + c + "'");
    q.sql += ", \"" + c + "\"";
    q.index[c] = col++;
  }
  for (const auto& c : optional) {
    q.sql += have.count(c) ? ", \"" + c + "\"" : ", NULL";
    q.index[c] = col++;
  }
  q.sql += " FROM \"" + table + "\"";
  if (have.count("start")) q.sql += " ORDER BY start";
  return q;
}

// The SELECT of a table's columns as tables.py describes them (nsys_columns.h), plus `extra`
// optional ones the importer reads itself.
template <class StoreRow>
Query query_of(NsysFile& f, const std::vector<std::string>& extra = {}) {
  using Columns = store::nsys::Columns<StoreRow>;
  std::vector<std::string> optional = Columns::optional;
  optional.insert(optional.end(), extra.begin(), extra.end());
  return build_query(f, Columns::table, Columns::required, optional);
}

class Row {
 public:
  Row(sqlite3_stmt* st, const Query& q, const NsysFile& f, const char* table)
      : st_(st), q_(q), f_(f), table_(table) {}
  bool null(const char* c) const { return sqlite3_column_type(st_, q_.index.at(c)) == SQLITE_NULL; }
  std::optional<int64_t> opt(const char* c) const {
    int i = q_.index.at(c);
    int type = sqlite3_column_type(st_, i);
    if (type == SQLITE_NULL) return std::nullopt;
    if (type != SQLITE_INTEGER && type != SQLITE_FLOAT)
      throw InputError(f_.path(), where(), std::string("column '") + c + "' is not a number");
    if (type == SQLITE_FLOAT) {
      // Every column read here is an integer (ids, times, sizes, dimensions): a stream 1.5 was
      // truncated to stream 1, and 1e30 saturated to the int64 limit. A whole number stored as a
      // REAL (7.0) is kept.
      const double x = sqlite3_column_double(st_, i);
      if (!(x >= -9.2e18 && x <= 9.2e18) || x != std::trunc(x)) {
        std::ostringstream text;
        text << x;
        throw InputError(f_.path(), where(),
                         std::string("column '") + c +
                             "' is not a whole number in the int64 range (" + text.str() +
                             "), expected an integer");
      }
    }
    return sqlite3_column_int64(st_, i);
  }
  // A 32-bit column. CUPTI's ids are uint32 (4294967295 for "none"): those are kept as the
  // int32 of the same bits, as the Kineto importer and CUPTI's own structs read them; anything
  // wider was cut to its low 32 bits without a word.
  template <class T = int32_t>
  std::optional<T> opt_as(const char* c) const {
    auto v = opt(c);
    if (!v) return std::nullopt;
    if constexpr (std::is_same_v<T, int32_t>) {
      if (*v < INT32_MIN || *v > int64_t{UINT32_MAX})
        throw InputError(f_.path(), where(),
                         std::string("column '") + c + "' is out of range (" + std::to_string(*v) +
                             "), expected a 32-bit integer");
      if (*v > INT32_MAX) return static_cast<int32_t>(static_cast<uint32_t>(*v));
    }
    return static_cast<T>(*v);
  }
  int64_t req(const char* c) const {
    auto v = opt(c);
    if (!v)
      throw InputError(f_.path(), where(), std::string("required column '") + c + "' is NULL");
    return *v;
  }
  std::optional<double> real(const char* c) const {
    int i = q_.index.at(c);
    if (sqlite3_column_type(st_, i) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_double(st_, i);
  }
  std::optional<std::string> text(const char* c) const {
    int i = q_.index.at(c);
    if (sqlite3_column_type(st_, i) == SQLITE_NULL) return std::nullopt;
    return NsysFile::text(st_, i);
  }
  std::string where() const {
    return std::string("table ") + table_ + " row " + std::to_string(sqlite3_column_int64(st_, 0));
  }

 private:
  sqlite3_stmt* st_;
  const Query& q_;
  const NsysFile& f_;
  const char* table_;
};

constexpr const char* kGpu = store::nsys::Columns<store::GpuInfo>::table;
// The tables an export may carry activity in: every event table, and the GPUs.
constexpr const char* kActivityTables[] = {
#define FLEETSCOPE_TABLE_NAME(Row, plural) store::nsys::Columns<store::Row>::table,
    FLEETSCOPE_NSYS_EVENT_ROWS(FLEETSCOPE_TABLE_NAME)
#undef FLEETSCOPE_TABLE_NAME
        kGpu};

// Rows of a table that always names a device, or may (a sync may wait on no device).
template <class StoreRow>
concept OnDevice = std::is_same_v<decltype(StoreRow::deviceId), int32_t>;
template <class StoreRow>
concept MaybeOnDevice = std::is_same_v<decltype(StoreRow::deviceId), std::optional<int32_t>>;

// Columns the importer reads besides the generated copy: NVTX text is inline or a StringIds id
// (registered strings), resolved here rather than copied.
template <class StoreRow>
std::vector<std::string> extra_columns() {
  if constexpr (std::is_same_v<StoreRow, store::NvtxEvent>) return {"text", "textId"};
  return {};
}

}  // namespace

ImportResult import_nsys_sqlite(const std::string& path, store::RowSink& writer,
                                const ImportOptions& options) {
  ImportResult result;
  result.path = path;
  result.source = "nsys-sqlite";
  NsysFile f(path);
  if (!f.has_table("StringIds"))
    throw InputError(
        path, "table StringIds",
        "missing table; not an Nsight Systems SQLite export (nsys export --type sqlite)");
  bool any = false;
  std::string tables;
  for (const char* t : kActivityTables) {
    any = any || f.has_table(t);
    tables += std::string(tables.empty() ? "" : ", ") + t;
  }
  if (!any)
    throw InputError(path, std::string("table ") + kActivityTables[0],
                     "missing table; the export has none of " + tables);

  std::unordered_map<int64_t, std::string> strings;
  {
    Query q = build_query(f, "StringIds", {"id", "value"}, {});
    f.for_each(q.sql, "StringIds", [&](sqlite3_stmt* st) {
      strings.emplace(sqlite3_column_int64(st, 1), NsysFile::text(st, 2));
    });
  }
  auto str = [&](const Row& r, const char* col) -> std::string {
    int64_t id = r.req(col);
    auto it = strings.find(id);
    if (it == strings.end())
      throw InputError(path, r.where(),
                       std::string("column '") + col + "' refers to string id " +
                           std::to_string(id) + ", which is not in StringIds");
    return it->second;
  };

  store::Capture capture;
  capture.kind = store::CaptureKind::imported;
  capture.source = result.source;
  capture.source_path = path;
  capture.id = writer.add_capture(capture);
  result.capture_id = capture.id;

  int64_t lo = INT64_MAX, hi = INT64_MIN;
  auto see = [&](int64_t s, int64_t e) {
    lo = std::min(lo, s);
    hi = std::max(hi, e);
  };
  const int64_t every = std::max<int64_t>(1, options.progress_every_events);
  auto tick = [&] {
    ++result.events_seen;
    if (options.progress && result.events_seen % every == 0)
      options.progress({path, 0, 0, result.events_seen, false});
  };
  std::set<int32_t> devices;
  // Values no CUPTI record has, refused at their row as the Kineto importer refuses them at their
  // event: an activity that ends before it starts (every row needs end >= start; Perfetto drops
  // such a slice as an import error), a launch dimension below 1 (CUDA refuses 0), a negative
  // byte count or GPU index (device -1 became a "GPU -1"). They were imported as given.
  auto check_span = [&](const Row& r, int64_t start, int64_t end) {
    if (end < start)
      throw InputError(path, r.where(),
                       "column 'end' (" + std::to_string(end) + ") is before column 'start' (" +
                           std::to_string(start) + "), expected end >= start");
  };
  auto check_at_least = [&](const Row& r, const char* column, int64_t value, int64_t min,
                            const char* expected) {
    if (value < min)
      throw InputError(path, r.where(),
                       std::string("column '") + column + "' is out of range (" +
                           std::to_string(value) + "), expected " + expected);
  };

  std::set<int64_t> pids;
  // What the generated copy (nsys_columns.h) does not fill: columns nsys lacks or names otherwise.
  // Called before the checks below.
  auto translate = [&](const Row& r, auto& row) {
    using StoreRow = std::decay_t<decltype(row)>;
    if constexpr (std::is_same_v<StoreRow, store::RuntimeCall>) {
      // nsys files runtime and driver calls in one table; the name tells them apart.
      const bool driver = row.name.rfind("cu", 0) == 0 && row.name.rfind("cuda", 0) != 0;
      row.eventClass = driver ? store::ApiClass::driver : store::ApiClass::runtime;
      pids.insert(store::pid_of(row.globalTid));
    } else if constexpr (std::is_same_v<StoreRow, store::NvtxEvent>) {
      if (auto t = r.text("text"))
        row.text = *t;
      else if (!r.null("textId"))
        row.text = str(r, "textId");
    }
  };
  // One loop for every event table: copy the columns by name, translate, check the values every
  // table of its kind must hold, stamp the capture, hand the row on.
  auto import_table = [&]<class StoreRow>(StoreRow*, int64_t& count) {
    using Columns = store::nsys::Columns<StoreRow>;
    if (!f.has_table(Columns::table)) return;
    Query q = query_of<StoreRow>(f, extra_columns<StoreRow>());
    f.for_each(q.sql, Columns::table, [&](sqlite3_stmt* st) {
      Row r(st, q, f, Columns::table);
      StoreRow row;
      Columns::read(row, r, str);
      translate(r, row);
      int64_t end = row.start;
      if constexpr (std::is_same_v<decltype(StoreRow::end), int64_t>) {
        end = row.end;
      } else if (row.end) {  // an NVTX mark has no end
        end = *row.end;
      }
      check_span(r, row.start, end);
      if constexpr (OnDevice<StoreRow>) {
        check_at_least(r, "deviceId", row.deviceId, 0, "a GPU index (0 or more)");
        devices.insert(row.deviceId);
      } else if constexpr (MaybeOnDevice<StoreRow>) {
        if (row.deviceId) devices.insert(*row.deviceId);  // a sync may name no device
      }
      if constexpr (requires { StoreRow::bytes; })
        check_at_least(r, "bytes", row.bytes, 0, "0 or more");
      if constexpr (std::is_same_v<StoreRow, store::Kernel>) {
        // (0: the export has no such column.)
        for (const auto& [column, value] :
             {std::pair{"gridX", row.gridX}, std::pair{"gridY", row.gridY},
              std::pair{"gridZ", row.gridZ}, std::pair{"blockX", row.blockX},
              std::pair{"blockY", row.blockY}, std::pair{"blockZ", row.blockZ}})
          if (!r.null(column)) check_at_least(r, column, value, 1, "a dimension of 1 or more");
      }
      row.captureId = capture.id;
      see(row.start, end);
      ++count;
      tick();
      writer.add(std::move(row));
    });
  };
#define FLEETSCOPE_IMPORT_TABLE(Row, plural) \
  import_table(static_cast<store::Row*>(nullptr), result.plural);
  FLEETSCOPE_NSYS_EVENT_ROWS(FLEETSCOPE_IMPORT_TABLE)
#undef FLEETSCOPE_IMPORT_TABLE

  const bool gpu_activity =
      result.kernels + result.memcpys + result.memsets + result.syncs + result.runtime_calls > 0;
  std::set<int32_t> written;
  if (f.has_table(kGpu)) {
    Query q = query_of<store::GpuInfo>(f);
    f.for_each(q.sql, kGpu, [&](sqlite3_stmt* st) {
      Row r(st, q, f, kGpu);
      store::GpuInfo g;
      store::nsys::Columns<store::GpuInfo>::read(g, r, str);
      g.captureId = capture.id;
      g.vendor = "nvidia";  // nsys CUDA traces are NVIDIA's; its 'vendor' column is free text
      if (!written.insert(g.id).second) return;
      writer.add_gpu(g);
    });
  }
  for (int32_t d : devices) {
    if (!written.insert(d).second) continue;
    store::GpuInfo g;
    g.id = d;
    g.captureId = capture.id;
    writer.add_gpu(g);
  }
  result.gpus = static_cast<int64_t>(written.size());

  store::Workflow wf;
  wf.name = options.workflow_name.empty() ? file_stem(path) : options.workflow_name;
  int64_t workflow_id = writer.add_workflow(wf);
  std::map<int64_t, std::string> names;
  if (f.has_table("PROCESSES")) {
    Query q = build_query(f, "PROCESSES", {"globalPid"}, {"pid", "name"});
    f.for_each(q.sql, "PROCESSES", [&](sqlite3_stmt* st) {
      Row r(st, q, f, "PROCESSES");
      int64_t gp = r.req("globalPid");
      pids.insert(store::pid_of(gp));
      names[store::pid_of(gp)] = r.text("name").value_or("");
    });
  }
  for (int64_t pid : pids) {
    store::Process p;
    p.captureId = capture.id;
    p.globalPid = store::global_pid(pid);
    p.pid = pid;
    p.workflow_id = workflow_id;
    if (auto it = names.find(pid); it != names.end() && !it->second.empty()) p.command = it->second;
    writer.upsert_process(p);
  }

  if (lo != INT64_MAX) {
    result.start_ns = lo;
    result.end_ns = hi;
  }
  if (gpu_activity)
    result.gpu_vendor = "nvidia";
  else
    result.note = "no GPU activity in this trace";
  capture.start_ns = result.start_ns;
  capture.end_ns = result.end_ns;
  capture.gpu_vendor = result.gpu_vendor;
  capture.note = result.note;
  writer.update_capture(capture);
  if (options.progress) options.progress({path, 0, 0, result.events_seen, true});
  return result;
}

}  // namespace fleetscope::importers
