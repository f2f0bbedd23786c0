#include "fleetscope/store/reader.h"

#include <sqlite3.h>

#include <algorithm>

#include "fleetscope/store/error.h"

namespace fleetscope::store {
namespace {

// Times read back from a file are untrusted (a corrupted or hand-edited database): each must be
// an INTEGER within +-2^62 ns (+-146 years), so that differences and sums stay inside int64. A
// REAL such as 1e300, text, or INT64_MIN is an InputError naming the file, table and column.
int64_t checked_time(const Statement& s, int col, const char* table, const char* column) {
  const int type = sqlite3_column_type(s.raw(), col);
  const int64_t v = sqlite3_column_int64(s.raw(), col);
  constexpr int64_t kLimit = int64_t{1} << 62;
  if (type == SQLITE_INTEGER && v >= -kLimit && v <= kLimit) return v;
  const char* file = sqlite3_db_filename(sqlite3_db_handle(s.raw()), "main");
  std::string found = type == SQLITE_INTEGER ? std::to_string(v)
                      : type == SQLITE_FLOAT
                          ? "the real number " + std::to_string(sqlite3_column_double(s.raw(), col))
                      : type == SQLITE_NULL ? "NULL"
                      : type == SQLITE_TEXT ? "text"
                                            : "a blob";
  throw InputError(file && *file ? file : "(in-memory database)", std::string("table ") + table,
                   std::string("column ") + column + " is " + found +
                       ", expected an integer time in ns within +-2^62");
}

template <class T>
std::optional<T> opt(const Statement& s, int col) {
  if (s.column_is_null(col)) return std::nullopt;
  if constexpr (std::is_same_v<T, std::string>)
    return s.column_text(col);
  else if constexpr (std::is_floating_point_v<T>)
    return s.column_double(col);
  else
    return static_cast<T>(s.column_int(col));
}

// Builds "WHERE ..." for an event table and binds it. `time_col`/`end_col` name the time columns;
// `has_device` says whether deviceId/streamId exist.
struct WhereClause {
  std::string sql;
  std::vector<int64_t> args;
};

WhereClause where_for(const Reader& reader, const std::string& table, const EventFilter& f,
                      bool has_device, const char* time_col = "start",
                      const char* end_col = "end") {
  WhereClause w;
  std::string sql = " WHERE 1=1";
  if (f.captureId) {
    sql += " AND captureId = ?";
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
  if (f.window.begin != INT64_MIN || f.window.end != INT64_MAX) {
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

Capture read_capture(const Statement& s) {
  Capture c;
  c.id = s.column_int(0);
  c.kind = capture_kind_from_string(s.column_text(1)).value_or(CaptureKind::imported);
  c.source = s.column_text(2);
  c.source_path = opt<std::string>(s, 3).value_or("");
  c.start_ns = opt<int64_t>(s, 4);
  c.end_ns = opt<int64_t>(s, 5);
  c.dropped_records = s.column_int(6);
  c.collector_overhead_ns = s.column_int(7);
  c.gpu_vendor = opt<std::string>(s, 8);
  c.note = opt<std::string>(s, 9);
  return c;
}

const char* kCaptureColumns =
    "SELECT id, kind, source, source_path, start_ns, end_ns, dropped_records, "
    "collector_overhead_ns, gpu_vendor, note FROM captures";

const char* kKernelColumns =
    "SELECT start, end, deviceId, contextId, streamId, correlationId, globalPid, demangledName, "
    "shortName, gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, "
    "staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, graphId, graphNodeId, "
    "launchType, blocksPerSm, warpsPerSm, estOccupancy, captureId FROM CUPTI_ACTIVITY_KIND_KERNEL";

Kernel read_kernel(const Statement& s) {
  Kernel k;
  k.start = checked_time(s, 0, "CUPTI_ACTIVITY_KIND_KERNEL", "start");
  k.end = checked_time(s, 1, "CUPTI_ACTIVITY_KIND_KERNEL", "end");
  k.deviceId = static_cast<int32_t>(s.column_int(2));
  k.contextId = opt<int32_t>(s, 3);
  k.streamId = static_cast<int32_t>(s.column_int(4));
  k.correlationId = opt<int64_t>(s, 5);
  k.globalPid = opt<int64_t>(s, 6);
  k.demangledNameId = s.column_int(7);
  k.shortNameId = s.column_int(8);
  k.gridX = static_cast<int32_t>(s.column_int(9));
  k.gridY = static_cast<int32_t>(s.column_int(10));
  k.gridZ = static_cast<int32_t>(s.column_int(11));
  k.blockX = static_cast<int32_t>(s.column_int(12));
  k.blockY = static_cast<int32_t>(s.column_int(13));
  k.blockZ = static_cast<int32_t>(s.column_int(14));
  k.registersPerThread = opt<int32_t>(s, 15);
  k.staticSharedMemory = opt<int32_t>(s, 16);
  k.dynamicSharedMemory = opt<int32_t>(s, 17);
  k.localMemoryPerThread = opt<int32_t>(s, 18);
  k.graphId = opt<int64_t>(s, 19);
  k.graphNodeId = opt<int64_t>(s, 20);
  k.launchType = opt<int32_t>(s, 21);
  k.blocksPerSm = opt<double>(s, 22);
  k.warpsPerSm = opt<double>(s, 23);
  k.estOccupancy = opt<double>(s, 24);
  k.captureId = s.column_int(25);
  return k;
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

}  // namespace

Reader::Reader(const std::string& path) : db_(Database::open(path, OpenMode::read_only)) {}
Reader::Reader(Database db) : db_(std::move(db)) {}

std::vector<Capture> Reader::captures() const {
  std::vector<Capture> out;
  Statement s = db_.prepare(std::string(kCaptureColumns) + " ORDER BY id");
  while (s.step()) out.push_back(read_capture(s));
  return out;
}

std::optional<Capture> Reader::capture(int64_t id) const {
  Statement s = db_.prepare(std::string(kCaptureColumns) + " WHERE id = ?");
  s.bind(1, id);
  if (s.step()) return read_capture(s);
  return std::nullopt;
}

std::vector<GpuInfo> Reader::gpus(std::optional<int64_t> capture_id) const {
  std::vector<GpuInfo> out;
  Statement s = db_.prepare(
      std::string("SELECT id, captureId, name, uuid, busLocation, totalMemory, smCount, "
                  "computeMajor, computeMinor, clockRate, memoryBandwidth, maxThreadsPerBlock, "
                  "maxWarpsPerSm, maxBlocksPerSm, maxRegistersPerSm, maxShmemPerSm, "
                  "threadsPerWarp, vendor FROM TARGET_INFO_GPU") +
      (capture_id ? " WHERE captureId = ?" : "") + " ORDER BY captureId, id");
  if (capture_id) s.bind(1, *capture_id);
  while (s.step()) {
    GpuInfo g;
    g.id = static_cast<int32_t>(s.column_int(0));
    g.captureId = s.column_int(1);
    g.name = s.column_text(2);
    g.uuid = opt<std::string>(s, 3);
    g.busLocation = opt<std::string>(s, 4);
    g.totalMemory = opt<int64_t>(s, 5);
    g.smCount = opt<int32_t>(s, 6);
    g.computeMajor = opt<int32_t>(s, 7);
    g.computeMinor = opt<int32_t>(s, 8);
    g.clockRate = opt<int64_t>(s, 9);
    g.memoryBandwidth = opt<int64_t>(s, 10);
    g.maxThreadsPerBlock = opt<int32_t>(s, 11);
    g.maxWarpsPerSm = opt<int32_t>(s, 12);
    g.maxBlocksPerSm = opt<int32_t>(s, 13);
    g.maxRegistersPerSm = opt<int32_t>(s, 14);
    g.maxShmemPerSm = opt<int64_t>(s, 15);
    g.threadsPerWarp = opt<int32_t>(s, 16);
    g.vendor = opt<std::string>(s, 17).value_or("nvidia");
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<Process> Reader::processes(std::optional<int64_t> capture_id) const {
  std::vector<Process> out;
  Statement s = db_.prepare(
      "SELECT captureId, globalPid, pid, host_id, workflow_id, rank, world_size, command, "
      "start_ns, end_ns FROM processes ORDER BY captureId, globalPid");
  while (s.step()) {
    Process p;
    p.captureId = opt<int64_t>(s, 0);
    p.globalPid = s.column_int(1);
    p.pid = s.column_int(2);
    p.host_id = opt<int64_t>(s, 3);
    p.workflow_id = opt<int64_t>(s, 4);
    p.rank = opt<int32_t>(s, 5);
    p.world_size = opt<int32_t>(s, 6);
    p.command = opt<std::string>(s, 7);
    p.start_ns = opt<int64_t>(s, 8);
    p.end_ns = opt<int64_t>(s, 9);
    out.push_back(std::move(p));
  }
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
  std::vector<Workflow> out;
  Statement s = db_.prepare("SELECT id, name, user, labels FROM workflows ORDER BY id");
  while (s.step()) {
    Workflow w;
    w.id = s.column_int(0);
    w.name = s.column_text(1);
    w.user = opt<std::string>(s, 2);
    w.labels_json = opt<std::string>(s, 3).value_or("{}");
    out.push_back(std::move(w));
  }
  return out;
}

std::vector<Host> Reader::hosts() const {
  std::vector<Host> out;
  Statement s = db_.prepare("SELECT id, hostname, boot_id FROM hosts ORDER BY id");
  while (s.step()) out.push_back({s.column_int(0), s.column_text(1), opt<std::string>(s, 2)});
  return out;
}

std::vector<Kernel> Reader::kernels(const EventFilter& filter) const {
  std::vector<Kernel> out;
  for_each_kernel(filter, [&](const Kernel& k) { out.push_back(k); });
  return out;
}

void Reader::for_each_kernel(const EventFilter& filter,
                             const std::function<void(const Kernel&)>& fn) const {
  WhereClause w = where_for(*this, "CUPTI_ACTIVITY_KIND_KERNEL", filter, true);
  Statement s = prepare_where(db_, kKernelColumns, w, " ORDER BY start");
  while (s.step()) fn(read_kernel(s));
}

std::vector<Memcpy> Reader::memcpys(const EventFilter& filter) const {
  std::vector<Memcpy> out;
  WhereClause w = where_for(*this, "CUPTI_ACTIVITY_KIND_MEMCPY", filter, true);
  Statement s = prepare_where(
      db_,
      "SELECT start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes, "
      "copyKind, srcKind, dstKind, srcDeviceId, dstDeviceId, graphNodeId, captureId "
      "FROM CUPTI_ACTIVITY_KIND_MEMCPY",
      w, " ORDER BY start");
  while (s.step()) {
    Memcpy m;
    m.start = checked_time(s, 0, "CUPTI_ACTIVITY_KIND_MEMCPY", "start");
    m.end = checked_time(s, 1, "CUPTI_ACTIVITY_KIND_MEMCPY", "end");
    m.deviceId = static_cast<int32_t>(s.column_int(2));
    m.contextId = opt<int32_t>(s, 3);
    m.streamId = static_cast<int32_t>(s.column_int(4));
    m.correlationId = opt<int64_t>(s, 5);
    m.globalPid = opt<int64_t>(s, 6);
    m.bytes = s.column_int(7);
    m.copyKind = static_cast<int32_t>(s.column_int(8));
    m.srcKind = opt<int32_t>(s, 9);
    m.dstKind = opt<int32_t>(s, 10);
    m.srcDeviceId = opt<int32_t>(s, 11);
    m.dstDeviceId = opt<int32_t>(s, 12);
    m.graphNodeId = opt<int64_t>(s, 13);
    m.captureId = s.column_int(14);
    out.push_back(m);
  }
  return out;
}

std::vector<Memset> Reader::memsets(const EventFilter& filter) const {
  std::vector<Memset> out;
  WhereClause w = where_for(*this, "CUPTI_ACTIVITY_KIND_MEMSET", filter, true);
  Statement s = prepare_where(
      db_,
      "SELECT start, end, deviceId, contextId, streamId, correlationId, globalPid, value, bytes, "
      "memKind, graphNodeId, captureId FROM CUPTI_ACTIVITY_KIND_MEMSET",
      w, " ORDER BY start");
  while (s.step()) {
    Memset m;
    m.start = checked_time(s, 0, "CUPTI_ACTIVITY_KIND_MEMSET", "start");
    m.end = checked_time(s, 1, "CUPTI_ACTIVITY_KIND_MEMSET", "end");
    m.deviceId = static_cast<int32_t>(s.column_int(2));
    m.contextId = opt<int32_t>(s, 3);
    m.streamId = static_cast<int32_t>(s.column_int(4));
    m.correlationId = opt<int64_t>(s, 5);
    m.globalPid = opt<int64_t>(s, 6);
    m.value = opt<int32_t>(s, 7);
    m.bytes = s.column_int(8);
    m.memKind = opt<int32_t>(s, 9);
    m.graphNodeId = opt<int64_t>(s, 10);
    m.captureId = s.column_int(11);
    out.push_back(m);
  }
  return out;
}

std::vector<RuntimeCall> Reader::runtime_calls(const EventFilter& filter) const {
  std::vector<RuntimeCall> out;
  WhereClause w = where_for(*this, "CUPTI_ACTIVITY_KIND_RUNTIME", filter, false);
  Statement s = prepare_where(db_,
                              "SELECT start, end, eventClass, globalTid, correlationId, nameId, "
                              "returnValue, cbid, captureId FROM CUPTI_ACTIVITY_KIND_RUNTIME",
                              w, " ORDER BY start");
  while (s.step()) {
    RuntimeCall r;
    r.start = checked_time(s, 0, "CUPTI_ACTIVITY_KIND_RUNTIME", "start");
    r.end = checked_time(s, 1, "CUPTI_ACTIVITY_KIND_RUNTIME", "end");
    r.eventClass = s.column_int(2) == 1 ? ApiClass::driver : ApiClass::runtime;
    r.globalTid = s.column_int(3);
    r.correlationId = opt<int64_t>(s, 4);
    r.nameId = s.column_int(5);
    r.returnValue = opt<int32_t>(s, 6);
    r.cbid = opt<int32_t>(s, 7);
    r.captureId = s.column_int(8);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<Sync> Reader::syncs(const EventFilter& filter) const {
  std::vector<Sync> out;
  WhereClause w = where_for(*this, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", filter, true);
  Statement s = prepare_where(
      db_,
      "SELECT start, end, deviceId, contextId, streamId, correlationId, globalPid, globalTid, "
      "syncType, eventId, captureId FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
      w, " ORDER BY start");
  while (s.step()) {
    Sync y;
    y.start = checked_time(s, 0, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "start");
    y.end = checked_time(s, 1, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "end");
    y.deviceId = opt<int32_t>(s, 2);
    y.contextId = opt<int32_t>(s, 3);
    y.streamId = opt<int32_t>(s, 4);
    y.correlationId = opt<int64_t>(s, 5);
    y.globalPid = opt<int64_t>(s, 6);
    y.globalTid = opt<int64_t>(s, 7);
    y.syncType = static_cast<int32_t>(s.column_int(8));
    y.eventId = opt<int64_t>(s, 9);
    y.captureId = s.column_int(10);
    out.push_back(y);
  }
  return out;
}

std::vector<NvtxEvent> Reader::nvtx_events(const EventFilter& filter) const {
  std::vector<NvtxEvent> out;
  WhereClause w = where_for(*this, "NVTX_EVENTS", filter, false);
  Statement s = prepare_where(db_,
                              "SELECT start, end, eventType, rangeId, COALESCE(text, (SELECT value "
                              "FROM StringIds WHERE id = textId)), domainId, globalTid, captureId "
                              "FROM NVTX_EVENTS",
                              w, " ORDER BY start");
  while (s.step()) {
    NvtxEvent n;
    n.start = checked_time(s, 0, "NVTX_EVENTS", "start");
    n.end = opt<int64_t>(s, 1);
    n.eventType = static_cast<int32_t>(s.column_int(2));
    n.rangeId = opt<int64_t>(s, 3);
    n.text = s.column_text(4);
    n.domainId = opt<int32_t>(s, 5);
    n.globalTid = opt<int64_t>(s, 6);
    n.captureId = s.column_int(7);
    out.push_back(std::move(n));
  }
  return out;
}

std::vector<CpuOp> Reader::cpu_ops(const EventFilter& filter) const {
  std::vector<CpuOp> out;
  WhereClause w = where_for(*this, "cpu_ops", filter, false);
  Statement s = prepare_where(
      db_, "SELECT start, end, globalTid, nameId, category, externalId, captureId FROM cpu_ops", w,
      " ORDER BY start");
  while (s.step()) {
    CpuOp c;
    c.start = checked_time(s, 0, "cpu_ops", "start");
    c.end = checked_time(s, 1, "cpu_ops", "end");
    c.globalTid = s.column_int(2);
    c.nameId = s.column_int(3);
    c.category = s.column_text(4);
    c.externalId = opt<int64_t>(s, 5);
    c.captureId = s.column_int(6);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<Iteration> Reader::iterations(std::optional<int64_t> capture_id) const {
  std::vector<Iteration> out;
  Statement s = db_.prepare(
      std::string("SELECT captureId, globalPid, step, start, end, source FROM iterations") +
      // Ties (same start) in the order the rows were written, so every reader sees one order.
      (capture_id ? " WHERE captureId = ?" : "") + " ORDER BY captureId, start, rowid");
  if (capture_id) s.bind(1, *capture_id);
  while (s.step()) {
    Iteration it;
    it.captureId = s.column_int(0);
    it.globalPid = opt<int64_t>(s, 1);
    it.step = s.column_int(2);
    it.start = checked_time(s, 3, "iterations", "start");
    it.end = checked_time(s, 4, "iterations", "end");
    it.source = s.column_text(5);
    out.push_back(std::move(it));
  }
  return out;
}

std::vector<MemoryEvent> Reader::memory_events(const EventFilter& filter) const {
  std::vector<MemoryEvent> out;
  EventFilter f = filter;
  f.streamId.reset();
  WhereClause w = where_for(*this, "memory_events", f, true, "ts", "ts");
  Statement s = prepare_where(db_,
                              "SELECT ts, captureId, globalPid, deviceId, address, bytes, "
                              "total_allocated, total_reserved FROM memory_events",
                              w, " ORDER BY ts, rowid");  // ties in the order written
  while (s.step()) {
    MemoryEvent m;
    m.ts = checked_time(s, 0, "memory_events", "ts");
    m.captureId = s.column_int(1);
    m.globalPid = opt<int64_t>(s, 2);
    m.deviceId = static_cast<int32_t>(s.column_int(3));
    m.address = opt<int64_t>(s, 4);
    m.bytes = s.column_int(5);
    m.total_allocated = opt<int64_t>(s, 6);
    m.total_reserved = opt<int64_t>(s, 7);
    out.push_back(m);
  }
  return out;
}

std::vector<DeviceSample> Reader::device_samples(const EventFilter& filter) const {
  std::vector<DeviceSample> out;
  EventFilter f = filter;
  f.streamId.reset();
  WhereClause w = where_for(*this, "device_samples", f, true, "ts", "ts");
  Statement s =
      prepare_where(db_,
                    "SELECT ts, host_id, deviceId, metric_id, value, captureId, "
                    "(SELECT value FROM StringIds WHERE id = metric_id) FROM device_samples",
                    w, " ORDER BY ts");
  while (s.step()) {
    DeviceSample d;
    d.ts = checked_time(s, 0, "device_samples", "ts");
    d.host_id = opt<int64_t>(s, 1);
    d.deviceId = static_cast<int32_t>(s.column_int(2));
    d.metricId = s.column_int(3);
    d.value = s.column_double(4);
    d.captureId = opt<int64_t>(s, 5);
    d.metric = s.column_text(6);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<ExternalCorrelation> Reader::external_correlations(
    std::optional<int64_t> capture_id) const {
  std::vector<ExternalCorrelation> out;
  Statement s =
      db_.prepare(std::string("SELECT captureId, correlationId, externalKind, externalId FROM "
                              "external_correlation") +
                  (capture_id ? " WHERE captureId = ?" : "") + " ORDER BY rowid");
  if (capture_id) s.bind(1, *capture_id);
  while (s.step())
    out.push_back(
        {s.column_int(0), s.column_int(1), static_cast<int32_t>(s.column_int(2)), s.column_int(3)});
  return out;
}

std::vector<Finding> Reader::findings(std::optional<int64_t> capture_id) const {
  std::vector<Finding> out;
  Statement s = db_.prepare(
      std::string("SELECT id, captureId, rule, severity, deviceId, window_start, window_end, "
                  "impact_ns, evidence, recommendation, created_ns FROM findings") +
      (capture_id ? " WHERE captureId = ?" : "") + " ORDER BY impact_ns DESC, id");
  if (capture_id) s.bind(1, *capture_id);
  while (s.step()) {
    Finding f;
    f.id = s.column_int(0);
    f.captureId = s.column_int(1);
    f.rule = s.column_text(2);
    f.severity = s.column_text(3);
    f.deviceId = opt<int32_t>(s, 4);
    f.window_start = opt<int64_t>(s, 5);
    f.window_end = opt<int64_t>(s, 6);
    f.impact_ns = s.column_int(7);
    f.evidence_json = s.column_text(8);
    f.recommendation = s.column_text(9);
    f.created_ns = s.column_int(10);
    out.push_back(std::move(f));
  }
  return out;
}

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
    Statement s = db_.prepare(std::string("SELECT COUNT(*) FROM ") + table +
                              (capture_id ? " WHERE captureId = ?" : ""));
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
      if (text)
        row.emplace_back(reinterpret_cast<const char*>(text));
      else
        row.emplace_back(std::nullopt);
    }
    result.rows.push_back(std::move(row));
  }
  std::string message = sqlite3_errmsg(db_.raw());
  sqlite3_finalize(raw);
  if (rc != SQLITE_DONE) throw InputError(db_.path(), "query", message);
  return result;
}

}  // namespace fleetscope::store
