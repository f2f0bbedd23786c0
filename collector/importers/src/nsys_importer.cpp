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

constexpr const char* kKernel = "CUPTI_ACTIVITY_KIND_KERNEL";
constexpr const char* kMemcpy = "CUPTI_ACTIVITY_KIND_MEMCPY";
constexpr const char* kMemset = "CUPTI_ACTIVITY_KIND_MEMSET";
constexpr const char* kRuntime = "CUPTI_ACTIVITY_KIND_RUNTIME";
constexpr const char* kSync = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
constexpr const char* kNvtx = "NVTX_EVENTS";
constexpr const char* kGpu = "TARGET_INFO_GPU";

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
  for (const char* t : {kKernel, kMemcpy, kMemset, kRuntime, kSync, kNvtx, kGpu})
    any = any || f.has_table(t);
  if (!any)
    throw InputError(
        path, "table CUPTI_ACTIVITY_KIND_KERNEL",
        "missing table; the export has none of CUPTI_ACTIVITY_KIND_KERNEL/MEMCPY/MEMSET/RUNTIME/"
        "SYNCHRONIZATION, NVTX_EVENTS, TARGET_INFO_GPU");

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

  if (f.has_table(kKernel)) {
    Query q = query_of<store::Kernel>(f);
    f.for_each(q.sql, kKernel, [&](sqlite3_stmt* st) {
      Row r(st, q, f, kKernel);
      store::Kernel k;
      store::nsys::Columns<store::Kernel>::read(k, r, str);
      check_span(r, k.start, k.end);
      check_at_least(r, "deviceId", k.deviceId, 0, "a GPU index (0 or more)");
      // (0: the export has no such column.)
      for (const auto& [column, value] :
           {std::pair{"gridX", k.gridX}, std::pair{"gridY", k.gridY}, std::pair{"gridZ", k.gridZ},
            std::pair{"blockX", k.blockX}, std::pair{"blockY", k.blockY},
            std::pair{"blockZ", k.blockZ}})
        if (!r.null(column)) check_at_least(r, column, value, 1, "a dimension of 1 or more");
      k.captureId = capture.id;
      see(k.start, k.end);
      devices.insert(k.deviceId);
      ++result.kernels;
      tick();
      writer.add(std::move(k));
    });
  }
  if (f.has_table(kMemcpy)) {
    Query q = query_of<store::Memcpy>(f);
    f.for_each(q.sql, kMemcpy, [&](sqlite3_stmt* st) {
      Row r(st, q, f, kMemcpy);
      store::Memcpy m;
      store::nsys::Columns<store::Memcpy>::read(m, r, str);
      check_span(r, m.start, m.end);
      check_at_least(r, "deviceId", m.deviceId, 0, "a GPU index (0 or more)");
      check_at_least(r, "bytes", m.bytes, 0, "0 or more");
      m.captureId = capture.id;
      see(m.start, m.end);
      devices.insert(m.deviceId);
      ++result.memcpys;
      tick();
      writer.add(std::move(m));
    });
  }
  if (f.has_table(kMemset)) {
    Query q = query_of<store::Memset>(f);
    f.for_each(q.sql, kMemset, [&](sqlite3_stmt* st) {
      Row r(st, q, f, kMemset);
      store::Memset m;
      store::nsys::Columns<store::Memset>::read(m, r, str);
      check_span(r, m.start, m.end);
      check_at_least(r, "deviceId", m.deviceId, 0, "a GPU index (0 or more)");
      check_at_least(r, "bytes", m.bytes, 0, "0 or more");
      m.captureId = capture.id;
      see(m.start, m.end);
      devices.insert(m.deviceId);
      ++result.memsets;
      tick();
      writer.add(std::move(m));
    });
  }
  std::set<int64_t> pids;
  if (f.has_table(kRuntime)) {
    Query q = query_of<store::RuntimeCall>(f);
    f.for_each(q.sql, kRuntime, [&](sqlite3_stmt* st) {
      Row r(st, q, f, kRuntime);
      store::RuntimeCall c;
      store::nsys::Columns<store::RuntimeCall>::read(c, r, str);
      // nsys files runtime and driver calls in one table; the name tells them apart.
      bool driver = c.name.rfind("cu", 0) == 0 && c.name.rfind("cuda", 0) != 0;
      c.eventClass = driver ? store::ApiClass::driver : store::ApiClass::runtime;
      check_span(r, c.start, c.end);
      c.captureId = capture.id;
      see(c.start, c.end);
      pids.insert(store::pid_of(c.globalTid));
      ++result.runtime_calls;
      tick();
      writer.add(std::move(c));
    });
  }
  if (f.has_table(kSync)) {
    Query q = query_of<store::Sync>(f);
    f.for_each(q.sql, kSync, [&](sqlite3_stmt* st) {
      Row r(st, q, f, kSync);
      store::Sync s;
      store::nsys::Columns<store::Sync>::read(s, r, str);
      check_span(r, s.start, s.end);
      s.captureId = capture.id;
      see(s.start, s.end);
      if (s.deviceId) devices.insert(*s.deviceId);
      ++result.syncs;
      tick();
      writer.add(std::move(s));
    });
  }
  if (f.has_table(kNvtx)) {
    // The text is inline or a StringIds id (registered strings): read here, not copied.
    Query q = query_of<store::NvtxEvent>(f, {"text", "textId"});
    f.for_each(q.sql, kNvtx, [&](sqlite3_stmt* st) {
      Row r(st, q, f, kNvtx);
      store::NvtxEvent e;
      store::nsys::Columns<store::NvtxEvent>::read(e, r, str);
      if (auto t = r.text("text"))
        e.text = *t;
      else if (!r.null("textId"))
        e.text = str(r, "textId");
      if (e.end) check_span(r, e.start, *e.end);
      e.captureId = capture.id;
      see(e.start, e.end.value_or(e.start));
      ++result.nvtx_events;
      tick();
      writer.add(std::move(e));
    });
  }

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
