#include "fleetscope/analyzer/loader.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>
#include <utility>

#include <sqlite3.h>

#include "fleetscope/store/capture_rows.h"
#include "fleetscope/store/error.h"
#include "gpu_rows.h"

namespace fleetscope::analyzer {

namespace {

int64_t int_or(const store::Statement& s, int col, int64_t fallback) {
  return s.column_is_null(col) ? fallback : s.column_int(col);
}

void report(const LoadProgress& progress, const std::string& stage, int64_t rows) {
  if (progress) progress(stage, rows);
}

// start and end of one row, checked (see checked_time); end before start is an error.
std::pair<int64_t, int64_t> checked_span(const store::Statement& stmt, const std::string& path,
                                         const char* table, int64_t row) {
  const int64_t start = checked_time(stmt, 0, path, table, row, "start");
  const int64_t end = checked_time(stmt, 1, path, table, row, "end");
  if (end < start)
    throw InputError(path, std::string("table ") + table + " row " + std::to_string(row),
                     "end " + std::to_string(end) + " is before start " + std::to_string(start));
  return {start, end};
}

void push_span(const store::Statement& stmt, const std::string& path, const char* table,
               int64_t row, std::vector<int64_t>& starts, std::vector<int64_t>& ends) {
  const auto [start, end] = checked_span(stmt, path, table, row);
  starts.push_back(start);
  ends.push_back(end);
}

// The columns every GPU activity query selects first: start, end, deviceId, streamId,
// correlationId, globalPid (checked as the row is read).
GpuRow gpu_row(const store::Statement& stmt, const std::string& path, const char* table,
               int64_t row, int64_t name_id) {
  GpuRow r;
  std::tie(r.start, r.end) = checked_span(stmt, path, table, row);
  r.device = static_cast<int32_t>(
      checked_int(stmt, 2, path, table, row, "deviceId", INT32_MIN, INT32_MAX));
  r.stream = static_cast<int32_t>(
      checked_int(stmt, 3, path, table, row, "streamId", INT32_MIN, INT32_MAX));
  r.correlation = int_or(stmt, 4, -1);
  r.global_pid = int_or(stmt, 5, -1);
  r.name_id = name_id;
  return r;
}

void load_kernels(const store::Reader& reader, int64_t capture_id, CaptureData& data) {
  auto stmt = reader.database().prepare(
      "SELECT start, end, deviceId, streamId, correlationId, globalPid, demangledName, "
      "gridX, gridY, gridZ, estOccupancy" +
      store::capture_rows_sql(reader.database(), "CUPTI_ACTIVITY_KIND_KERNEL", capture_id));
  stmt.bind(1, capture_id);
  std::unordered_map<int64_t, WorkClass> class_by_name;
  const std::string& path = reader.database().path();
  const char* table = "CUPTI_ACTIVITY_KIND_KERNEL";
  int64_t row = 0;
  while (stmt.step()) {
    ++row;
    int64_t name_id = stmt.column_int(6);
    auto cls = class_by_name.find(name_id);
    if (cls == class_by_name.end())
      cls = class_by_name
                .emplace(name_id, classify_gpu_work(GpuEventKind::kernel, data.name(name_id)))
                .first;
    push_kernel(data.gpu, gpu_row(stmt, path, table, row, name_id), cls->second,
                grid_block_count(int_or(stmt, 7, 0), int_or(stmt, 8, 0), int_or(stmt, 9, 0)),
                stmt.column_is_null(10) ? std::nan("") : stmt.column_double(10));
  }
}

void load_memcpys(const store::Reader& reader, int64_t capture_id, CaptureData& data) {
  auto stmt = reader.database().prepare(
      "SELECT start, end, deviceId, streamId, correlationId, globalPid, bytes, copyKind, srcKind, "
      "dstKind" +
      store::capture_rows_sql(reader.database(), "CUPTI_ACTIVITY_KIND_MEMCPY", capture_id));
  stmt.bind(1, capture_id);
  const std::string& path = reader.database().path();
  const char* table = "CUPTI_ACTIVITY_KIND_MEMCPY";
  int64_t row = 0;
  while (stmt.step()) {
    ++row;
    std::optional<int32_t> src, dst;
    if (!stmt.column_is_null(8)) src = static_cast<int32_t>(stmt.column_int(8));
    if (!stmt.column_is_null(9)) dst = static_cast<int32_t>(stmt.column_int(9));
    int32_t copy_kind = static_cast<int32_t>(stmt.column_int(7));
    const int64_t name_id = data.intern(memcpy_label(copy_kind, src, dst));
    push_memcpy(data.gpu, gpu_row(stmt, path, table, row, name_id), stmt.column_int(6), copy_kind,
                src, dst);
  }
}

void load_memsets(const store::Reader& reader, int64_t capture_id, CaptureData& data) {
  auto stmt = reader.database().prepare(
      "SELECT start, end, deviceId, streamId, correlationId, globalPid, bytes, memKind" +
      store::capture_rows_sql(reader.database(), "CUPTI_ACTIVITY_KIND_MEMSET", capture_id));
  stmt.bind(1, capture_id);
  const int64_t name_id = data.intern("Memset (Device)");
  const std::string& path = reader.database().path();
  const char* table = "CUPTI_ACTIVITY_KIND_MEMSET";
  int64_t row = 0;
  while (stmt.step()) {
    ++row;
    std::optional<int32_t> mem_kind;
    if (!stmt.column_is_null(7)) mem_kind = static_cast<int32_t>(stmt.column_int(7));
    push_memset(data.gpu, gpu_row(stmt, path, table, row, name_id), stmt.column_int(6), mem_kind);
  }
}

void load_runtime(const store::Reader& reader, int64_t capture_id, CaptureData& data) {
  auto stmt = reader.database().prepare(
      "SELECT start, end, correlationId, nameId, globalTid" +
      store::capture_rows_sql(reader.database(), "CUPTI_ACTIVITY_KIND_RUNTIME", capture_id));
  stmt.bind(1, capture_id);
  auto& r = data.runtime;
  const std::string& path = reader.database().path();
  const char* table = "CUPTI_ACTIVITY_KIND_RUNTIME";
  int64_t row = 0;
  while (stmt.step()) {
    ++row;
    push_span(stmt, path, table, row, r.start, r.end);
    r.correlation.push_back(int_or(stmt, 2, -1));
    r.name_id.push_back(stmt.column_int(3));
    r.global_tid.push_back(stmt.column_int(4));
  }
}

// The capture's rows in the GPU activity tables (kernels, copies, memsets), counted in their row
// ranges (store/capture_rows.h): the columns are reserved once instead of doubling as they fill,
// which held the old and the new array of a column together (67 MB more for 10 M kernels).
size_t gpu_event_rows(const store::Reader& reader, int64_t capture_id) {
  size_t rows = 0;
  for (const char* table :
       {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}) {
    auto stmt = reader.database().prepare(
        "SELECT count(*)" + store::capture_rows_sql(reader.database(), table, capture_id));
    stmt.bind(1, capture_id);
    if (stmt.step()) rows += static_cast<size_t>(std::max<int64_t>(stmt.column_int(0), 0));
  }
  return rows;
}

// The device of every GPU event when the capture has exactly one, else nothing: a sync row without
// a device belongs to that GPU.
std::optional<int32_t> only_gpu_device(const CaptureData& data) {
  if (data.gpu.device.empty()) return std::nullopt;
  const int32_t first = data.gpu.device.front();
  for (size_t i = 1; i < data.gpu.device.size(); ++i)
    if (data.gpu.device[i] != first) return std::nullopt;
  return first;
}

// Sync rows with a stream (see GpuSyncs). A row without a device goes to the capture's only GPU.
void load_gpu_syncs(const store::Reader& reader, int64_t capture_id, CaptureData& data) {
  const std::optional<int32_t> only_device = only_gpu_device(data);
  auto stmt = reader.database().prepare(
      "SELECT start, end, deviceId, streamId, syncType, correlationId" +
      store::capture_rows_sql(reader.database(), "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
                              capture_id) +
      " AND streamId IS NOT NULL");
  stmt.bind(1, capture_id);
  auto& s = data.gpu_syncs;
  const std::string& path = reader.database().path();
  const char* table = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
  int64_t row = 0;
  while (stmt.step()) {
    ++row;
    std::optional<int32_t> device = only_device;
    if (!stmt.column_is_null(2)) device = static_cast<int32_t>(stmt.column_int(2));
    if (!device) continue;
    const std::string name = sync_label(static_cast<int32_t>(stmt.column_int(4)));
    push_span(stmt, path, table, row, s.start, s.end);
    s.device.push_back(*device);
    s.stream.push_back(static_cast<int32_t>(stmt.column_int(3)));
    s.name_id.push_back(data.intern(name));
    s.work_class.push_back(classify_gpu_work(GpuEventKind::kernel, name));
    s.correlation.push_back(int_or(stmt, 5, -1));
  }
}

// The synchronization rows of SyncWait. A row without a device goes to the capture's only GPU, as
// in load_gpu_syncs.
void load_sync_waits(const store::Reader& reader, int64_t capture_id, CaptureData& data) {
  const std::optional<int32_t> only_device = only_gpu_device(data);
  auto stmt = reader.database().prepare(
      "SELECT start, end, syncType, deviceId, streamId, correlationId, eventRecordCorrelationId, "
      "eventRecordStreamId" +
      store::capture_rows_sql(reader.database(), "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
                              capture_id) +
      " AND correlationId IS NOT NULL AND ((syncType IN (?2, ?3) AND "
      "eventRecordCorrelationId IS NOT NULL) OR (syncType = ?4 AND streamId IS NULL)) "
      "ORDER BY CUPTI_ACTIVITY_KIND_SYNCHRONIZATION.rowid");
  stmt.bind(1, capture_id);
  stmt.bind(2, static_cast<int64_t>(store::kSyncEvent));
  stmt.bind(3, static_cast<int64_t>(store::kSyncStreamWaitEvent));
  stmt.bind(4, static_cast<int64_t>(store::kSyncContext));
  const std::string& path = reader.database().path();
  const char* table = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
  int64_t row = 0;
  while (stmt.step()) {
    ++row;
    SyncWait w;
    std::tie(w.start, w.end) = checked_span(stmt, path, table, row);
    const auto type = stmt.column_int(2);
    w.kind = type == store::kSyncContext           ? SyncWait::Kind::context_sync
             : type == store::kSyncStreamWaitEvent ? SyncWait::Kind::stream_wait_event
                                                   : SyncWait::Kind::event_sync;
    if (!stmt.column_is_null(3))
      w.device = static_cast<int32_t>(stmt.column_int(3));
    else if (only_device)
      w.device = *only_device;
    w.stream = static_cast<int32_t>(int_or(stmt, 4, -1));
    w.correlation = stmt.column_int(5);
    w.record_correlation = int_or(stmt, 6, -1);
    w.record_stream = static_cast<int32_t>(int_or(stmt, 7, -1));
    data.sync_waits.push_back(w);
  }
}

// The PyTorch profiler names the DataLoader fetch "enumerate(DataLoader)#<iterator>.__next__";
// the TensorBoard plugin counts those ops as DataLoader time. In row order (finalize() sorts them
// by start only), as analyzer::CaptureSink produces them.
void load_dataloader_ops(const store::Reader& reader, int64_t capture_id, CaptureData& data) {
  auto stmt = reader.database().prepare(
      "SELECT c.start, c.end, c.nameId, c.globalTid" +
      store::capture_rows_sql(reader.database(), "cpu_ops", capture_id, 1,
                              store::CaptureRowsUse::rows, "c") +
      " AND c.nameId IN (SELECT id FROM StringIds WHERE value LIKE 'enumerate(DataLoader)%') "
      "ORDER BY c.rowid");
  stmt.bind(1, capture_id);
  const std::string& path = reader.database().path();
  int64_t row = 0;
  while (stmt.step()) {
    ++row;
    const int64_t start = checked_time(stmt, 0, path, "cpu_ops", row, "start");
    const int64_t end = checked_time(stmt, 1, path, "cpu_ops", row, "end");
    data.dataloader_ops.push_back(
        {start, std::max(start, end), stmt.column_int(2), stmt.column_int(3)});
  }
}

// Host activity (host_bound, the step breakdown): every cpu_ops row except gpu_user_annotation
// ranges, which Kineto draws on the GPU timeline (they mark GPU work, not CPU work): those go to
// gpu_annotations.
void load_cpu_ops(const store::Reader& reader, int64_t capture_id, CaptureData& data) {
  auto stmt = reader.database().prepare(
      "SELECT start, end, nameId, globalTid, category = 'cpu_op', "
      "category = 'gpu_user_annotation'" +
      store::capture_rows_sql(reader.database(), "cpu_ops", capture_id));
  stmt.bind(1, capture_id);
  const std::string& path = reader.database().path();
  int64_t row = 0;
  while (stmt.step()) {
    ++row;
    const int64_t start = checked_time(stmt, 0, path, "cpu_ops", row, "start");
    const int64_t end = checked_time(stmt, 1, path, "cpu_ops", row, "end");
    (stmt.column_int(5) != 0 ? data.gpu_annotations : data.cpu_ops)
        .push_back({start, std::max(start, end), stmt.column_int(2), int_or(stmt, 3, 0),
                    stmt.column_int(4) != 0});
  }
}

}  // namespace

int64_t resolve_capture_id(const store::Reader& reader, std::optional<int64_t> requested) {
  const std::string& path = reader.database().path();
  if (requested) {
    if (!reader.capture(*requested))
      throw InputError(path, "table captures", "no capture with id " + std::to_string(*requested));
    return *requested;
  }
  auto all = reader.captures();
  if (all.empty()) throw InputError(path, "table captures", "no capture in this database");
  int64_t best = all.front().id;
  for (const auto& c : all) best = std::max(best, c.id);
  return best;
}

std::vector<int64_t> select_captures(const store::Reader& reader,
                                     const common::CaptureChoice& choice, bool default_all,
                                     const std::string& shown_path) {
  std::vector<int64_t> ids;
  for (const auto& c : reader.captures()) ids.push_back(c.id);
  std::sort(ids.begin(), ids.end());
  if (choice.id) {
    if (!std::binary_search(ids.begin(), ids.end(), *choice.id))
      throw InputError(shown_path, "table captures",
                       "no capture with id " + std::to_string(*choice.id) +
                           (ids.empty() ? std::string(" (it holds none)")
                                        : " (`fleetscope info " + shown_path + "` lists them)"));
    return {*choice.id};
  }
  if (ids.empty()) throw InputError(shown_path, "table captures", "no capture in this database");
  if (choice.all || ids.size() == 1 || default_all) return ids;
  std::string list;
  for (size_t i = 0; i < ids.size() && i < 10; ++i)
    list += (i ? ", " : "") + std::to_string(ids[i]);
  if (ids.size() > 10) list += ", ...";
  throw InputError(shown_path, "table captures",
                   "holds " + std::to_string(ids.size()) + " captures (" + list +
                       "): choose one with --capture ID, or --capture all for each in turn");
}

CaptureData load_capture(const store::Reader& reader, int64_t capture_id,
                         const LoadProgress& progress, const CaptureParts& parts) {
  CaptureData data;
  data.loaded = parts;
  auto capture = reader.capture(capture_id);
  if (!capture)
    throw InputError(reader.database().path(), "table captures",
                     "no capture with id " + std::to_string(capture_id));
  data.capture = *capture;
  // Every read of the load on one snapshot of the file (a live host database takes other
  // captures' rows meanwhile): the key is the data's, and the row-range check before each read is
  // made once per table (store::capture_rows_sql).
  const store::ReadSnapshot snapshot(reader.database());
  // Before any row is read: where the connection was in a transaction of its own already, rows
  // added while loading make the key older than the data, so a later look-up misses (never the
  // other way round).
  data.rows_key = store::capture_rows_key(reader.database(), capture_id);
  data.names = reader.strings();
  data.gpus = reader.gpus(capture_id);
  data.processes = reader.processes(capture_id);
  data.workflows = reader.workflows();
  data.iterations = reader.iterations(capture_id);  // ties in row order, as CaptureSink keeps them
  if (parts.memory_events) {
    store::EventFilter filter;
    filter.captureId = capture_id;
    data.memory = reader.memory_events(filter);
  }

  data.gpu.reserve(gpu_event_rows(reader, capture_id));
  load_kernels(reader, capture_id, data);
  report(progress, "kernels", static_cast<int64_t>(data.gpu.size()));
  load_memcpys(reader, capture_id, data);
  load_memsets(reader, capture_id, data);
  report(progress, "gpu events", static_cast<int64_t>(data.gpu.size()));
  if (parts.gpu_syncs) {
    load_gpu_syncs(reader, capture_id, data);
    load_sync_waits(reader, capture_id, data);
  }
  if (parts.runtime) load_runtime(reader, capture_id, data);
  report(progress, "runtime calls", static_cast<int64_t>(data.runtime.size()));
  if (parts.dataloader_ops) load_dataloader_ops(reader, capture_id, data);
  if (parts.cpu_ops) load_cpu_ops(reader, capture_id, data);
  data.origin_file = reader.database().path();
  data.finalize();
  report(progress, "indexed", static_cast<int64_t>(data.gpu.size() + data.runtime.size()));
  return data;
}

}  // namespace fleetscope::analyzer
