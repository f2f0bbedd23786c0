#include "fleetscope/export/chrome_trace.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <unordered_map>

#include "analysis_counters.h"
#include "event_builder.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/common/new_file.h"
#include "fleetscope/export/json_text.h"
#include "fleetscope/store/capture_rows.h"
#include "fleetscope/store/checked_column.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/error.h"
#include "table_rows.h"

namespace fleetscope::exporter {
namespace {

using store::Statement;

// Host events whose process is unknown (NULL globalPid) go to one synthetic process. Linux pids
// stay below 2^22 (pid_max limit), so the largest 24-bit pid of the nsys encoding never collides.
constexpr int64_t kUnattributedPid = 0xFFFFFF;
// Flow ids of a several-capture export: capture * 2^40 + correlation id.
constexpr int64_t kMaxFlowCorrelation = (int64_t{1} << 40) - 1,
                  kMaxFlowCapture = (int64_t{1} << 22) - 1;
// Iteration spans get their own track in each process; 0 is never a user thread id on Linux.
constexpr int64_t kIterationsTid = 0;
// Kineto names device memory in "[memory]" events with c10::DeviceType values.
constexpr int64_t kDeviceTypeCpu = 0, kDeviceTypeCuda = 1;

// Enum labels come from the store (rows.h), so the exporter, analyzer and reports agree; they
// match Kineto's spellings (kineto/libkineto/src/output_json.cpp), which the importer reads back.
using store::memcpy_kind_label;
using store::memcpy_kind_short;
using store::memory_kind_label;
const char* sync_name(int32_t type) {
  return store::sync_type_label(type);
}

// The tables the export writes, as schema/tables.py describes them (table_columns.h).
constexpr const columns::Table& kGpuTable = columns::table("TARGET_INFO_GPU");
constexpr const columns::Table& kKernelTable = columns::table("CUPTI_ACTIVITY_KIND_KERNEL");
constexpr const columns::Table& kMemcpyTable = columns::table("CUPTI_ACTIVITY_KIND_MEMCPY");
constexpr const columns::Table& kMemsetTable = columns::table("CUPTI_ACTIVITY_KIND_MEMSET");
constexpr const columns::Table& kRuntimeTable = columns::table("CUPTI_ACTIVITY_KIND_RUNTIME");
constexpr const columns::Table& kSyncTable = columns::table("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION");
constexpr const columns::Table& kNvtxTable = columns::table("NVTX_EVENTS");
constexpr const columns::Table& kCpuOpsTable = columns::table("cpu_ops");
constexpr const columns::Table& kIterationsTable = columns::table("iterations");
constexpr const columns::Table& kMemoryEventsTable = columns::table("memory_events");
constexpr const columns::Table& kDeviceSamplesTable = columns::table("device_samples");

// A deviceId from one of the structural queries (UNIONs over the activity tables), checked
// against the column's range in the description before it is narrowed, as TableRows does.
int32_t checked_device(const Statement& row, int col, const char* table) {
  constexpr const columns::Column& device =
      kKernelTable.columns[column_index(kKernelTable, "deviceId")];
  return static_cast<int32_t>(
      store::checked_int(row, col, "", table, -1, "deviceId", device.min, device.max));
}
// The same, the table named by column `table_col` of the row.
int32_t checked_device(const Statement& row, int col, int table_col) {
  return checked_device(row, col, row.column_text(table_col).c_str());
}

// The SQL filters for the exported scope: one capture or everything.
struct Scope {
  std::optional<int64_t> capture_id;
  std::optional<store::Capture> capture;

  // " FROM <table> ... WHERE ..." naming the scope's rows of `table`: one capture's through
  // store::capture_rows_sql, the capture bound as ?1 (bind()); on the daemon's host database,
  // which keeps no per-capture index, that reads the capture's row ranges instead of scanning the
  // table; a file with the (captureId, start) index (a one-shot file) reads by the plain filter,
  // as before (by_time). Everything: " FROM <table> WHERE 1".
  std::string from(const store::Database& db, const std::string& table,
                   const std::string& alias = {}) const {
    if (!capture_id) return " FROM " + table + (alias.empty() ? "" : " AS " + alias) + " WHERE 1";
    return store::capture_rows_sql(db, table, *capture_id, 1, store::CaptureRowsUse::by_time,
                                   alias);
  }
  // Binds the capture a from() names (nothing for everything).
  void bind(Statement& statement) const {
    if (capture_id) statement.bind(1, *capture_id);
  }
  // device_samples may carry a NULL captureId (continuous sampling): take those inside the window.
  std::string and_sample_capture() const {
    if (!capture_id) return "";
    std::string clause = " AND (captureId = " + std::to_string(*capture_id);
    if (capture && capture->start_ns && capture->end_ns)
      clause += " OR (captureId IS NULL AND ts >= " + std::to_string(*capture->start_ns) +
                " AND ts <= " + std::to_string(*capture->end_ns) + ")";
    return clause + ")";
  }
};

std::string basename_of_command(const std::string& command) {
  std::string first = command.substr(0, command.find(' '));
  auto slash = first.rfind('/');
  return slash == std::string::npos ? first : first.substr(slash + 1);
}

class ChromeExporter {
 public:
  ChromeExporter(const store::Reader& reader, const ChromeExportOptions& options, Scope scope)
      : reader_(reader),
        db_(reader.database()),
        options_(options),
        scope_(std::move(scope)),
        strings_(reader.strings()),
        event_(0) {}

  ChromeExportStats run(ChromeTraceFile& file) {
    stats_.base_time_ns = compute_base_time();
    event_ = EventBuilder(stats_.base_time_ns);
    file_ = &file;
    next_progress_ = options_.progress_every;

    file.write_raw(header());
    file.begin_events();
    // Several captures: each gets its own process group (its own pids, names starting "capture
    // N: "), so captures recorded hours apart do not share one "GPU 0" track.
    std::vector<store::Capture> groups;
    if (!scope_.capture_id) {
      groups = reader_.captures();
      if (groups.size() < 2) groups.clear();
    }
    if (groups.empty()) write_sections();
    for (size_t k = 0; k < groups.size(); ++k) {
      scope_ = Scope{groups[k].id, groups[k]};
      grouped_ = true;
      group_pid_base_ = static_cast<int64_t>(k) * kGroupPidStride;
      group_label_ = "capture " + std::to_string(groups[k].id) + ": ";
      gpu_names_.clear(), host_pids_.clear(), host_threads_.clear(), iteration_pids_.clear();
      used_unattributed_pid_ = false;
      for (const store::GpuInfo& gpu : reader_.gpus(groups[k].id))
        gpu_names_.emplace(gpu.id, gpu.name);
      collect_host_processes();
      write_sections();
    }
    stats_.events = file.events_written();
    file.finish();
    stats_.bytes = file.bytes_written();
    if (options_.on_progress) options_.on_progress(stats_.events);
    return stats_;
  }

 private:
  EventSink* file_sink() { return file_; }

  void write_sections() {
    write_process_and_thread_names();
    write_kernels();
    write_memcpys();
    write_memsets();
    write_runtime_calls();
    write_syncs();
    write_nvtx_events();
    write_cpu_ops();
    if (options_.flows) write_flows();
    write_device_samples();
    write_memory_events();
    if (options_.analysis_counters) write_analysis_counter_tracks();
    write_iterations();
    if (options_.findings) {
      stats_.findings +=
          append_findings_events(*this->file_sink(), reader_.findings(scope_.capture_id),
                                 stats_.base_time_ns, group_pid_base_);
    }
    write_late_names();
  }

  void emit(std::string_view event) {
    file_->write_event(event);
    if (options_.on_progress && file_->events_written() >= next_progress_) {
      options_.on_progress(file_->events_written());
      next_progress_ += options_.progress_every;
    }
  }

  std::string_view text(int64_t string_id) const {
    auto it = strings_.find(string_id);
    return it == strings_.end() ? std::string_view("<unknown string>")
                                : std::string_view(it->second);
  }

  // The earliest event of the scope; the capture start if it has no events; else 0.
  int64_t compute_base_time() const {
    auto min_of = [&](const char* column, const char* table) {
      return std::string("SELECT MIN(") + column + ") AS m" + scope_.from(db_, table);
    };
    const std::string sql =
        "SELECT MIN(m) FROM (" + min_of("start", "CUPTI_ACTIVITY_KIND_KERNEL") + " UNION ALL " +
        min_of("start", "CUPTI_ACTIVITY_KIND_MEMCPY") + " UNION ALL " +
        min_of("start", "CUPTI_ACTIVITY_KIND_MEMSET") + " UNION ALL " +
        min_of("start", "CUPTI_ACTIVITY_KIND_RUNTIME") + " UNION ALL " +
        min_of("start", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION") + " UNION ALL " +
        min_of("start", "NVTX_EVENTS") + " UNION ALL " + min_of("start", "cpu_ops") +
        " UNION ALL " + min_of("start", "iterations") + " UNION ALL " +
        min_of("ts", "memory_events") + " UNION ALL SELECT MIN(ts) FROM device_samples WHERE 1" +
        scope_.and_sample_capture() + ")";
    Statement query = db_.prepare(sql);
    scope_.bind(query);
    if (query.step() && !query.column_is_null(0))
      return store::checked_time(query, 0, "", "event tables", -1, "start");
    if (scope_.capture && scope_.capture->start_ns) return *scope_.capture->start_ns;
    return 0;
  }

  std::string header() {
    std::string h = "{\n\"schemaVersion\": 1,\n\"baseTimeNanoseconds\": ";
    append_integer(h, stats_.base_time_ns);
    h += ",\n\"displayTimeUnit\": \"ms\",\n";

    // GPU facts under Kineto's "deviceProperties" keys, so a re-import recovers TARGET_INFO_GPU.
    h += "\"deviceProperties\": [";
    constexpr const columns::Table& t = kGpuTable;
    constexpr int kId = column_index(t, "id"), kName = column_index(t, "name"),
                  kWarps = column_index(t, "maxWarpsPerSm"),
                  kWarpSize = column_index(t, "threadsPerWarp");
    std::set<int32_t> seen;
    std::string members;
    TableRows gpus(db_, t, scope_.from(db_, std::string(t.name)) + " ORDER BY captureId, id",
                   scope_.capture_id);
    while (gpus.step()) {
      const int32_t id = gpus.int32(kId);
      if (!seen.insert(id).second) continue;
      if (!gpus.is_null(kName)) gpu_names_.emplace(id, gpus.text(kName));
      // Every column the description exports, under Kineto's key where Kineto has one.
      members.clear();
      gpus.append_args(members, strings_);
      if (!gpus.is_null(kWarps) && !gpus.is_null(kWarpSize)) {
        members += ",\"maxThreadsPerMultiprocessor\":";
        append_integer(members, gpus.integer(kWarps) * gpus.integer(kWarpSize));
      }
      h += seen.size() == 1 ? "\n{" : ",\n{";
      h += members;
      h += "}";
    }
    h += seen.empty() ? "],\n" : "\n],\n";

    // Kineto's optional "hostname", when the scope comes from one host.
    const std::vector<store::Host> hosts = reader_.hosts();
    if (hosts.size() == 1) {
      h += "\"hostname\": ";
      append_json_string(h, hosts.front().hostname);
      h += ",\n";
    }

    collect_host_processes();
    // Kineto's distributedInfo, when every traced process agrees on one rank.
    std::set<std::pair<int32_t, int32_t>> ranks;
    for (const store::Process& process : reader_.processes(scope_.capture_id))
      if (host_pids_.count(process.pid) && process.rank)
        ranks.emplace(*process.rank, process.world_size.value_or(0));
    if (ranks.size() == 1) {
      h += "\"distributedInfo\": {\"rank\": ";
      append_integer(h, ranks.begin()->first);
      if (ranks.begin()->second > 0) {
        h += ", \"world_size\": ";
        append_integer(h, ranks.begin()->second);
      }
      h += "},\n";
    }

    h += "\"metadata\": {\"producer\": \"fleetscope\", \"baseTimeNanoseconds\": ";
    append_integer(h, stats_.base_time_ns);
    h += ", \"timeUnit\": \"us relative to baseTimeNanoseconds\"";
    if (scope_.capture) {
      h += ", \"captureId\": ";
      append_integer(h, scope_.capture->id);
      h += ", \"captureKind\": ";
      append_json_string(h, store::to_string(scope_.capture->kind));
      h += ", \"captureSource\": ";
      append_json_string(h, scope_.capture->source);
      h += ", \"droppedRecords\": ";
      append_integer(h, scope_.capture->dropped_records);
      h += ", \"collectorOverheadNs\": ";
      append_integer(h, scope_.capture->collector_overhead_ns);
    }
    h += "},\n";
    return h;
  }

  // Host processes and threads that own events in the scope, from the nsys-encoded ids.
  void collect_host_processes() {
    auto from = [&](const char* table) { return scope_.from(db_, table); };
    Statement threads = db_.prepare(
        "SELECT globalTid" + from("CUPTI_ACTIVITY_KIND_RUNTIME") +
        // gpu_user_annotation rows sit on GPU tracks (their globalTid encodes device and stream).
        " UNION SELECT globalTid" + from("cpu_ops") + " AND category != 'gpu_user_annotation'" +
        " UNION SELECT globalTid" + from("NVTX_EVENTS") + " AND globalTid IS NOT NULL" +
        " UNION SELECT globalTid" + from("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION") +
        " AND globalTid IS NOT NULL AND streamId IS NULL");
    scope_.bind(threads);
    while (threads.step()) {
      const int64_t global_tid = threads.column_int(0);
      host_threads_.emplace(store::pid_of(global_tid), store::tid_of(global_tid));
      host_pids_.insert(store::pid_of(global_tid));
    }
    Statement owners = db_.prepare("SELECT globalPid" + from("iterations") +
                                   " AND globalPid IS NOT NULL" + " UNION SELECT globalPid" +
                                   from("memory_events") + " AND globalPid IS NOT NULL");
    scope_.bind(owners);
    while (owners.step()) host_pids_.insert(store::pid_of(owners.column_int(0)));
  }

  void write_process_and_thread_names() {
    // GPUs: every device with activity, samples or memory events in scope, plus the known ones.
    auto devices_of = [&](const char* table, const char* condition) {
      return std::string("SELECT deviceId, '") + table + "'" + scope_.from(db_, table) + condition;
    };
    std::set<int32_t> devices;
    for (const auto& [id, name] : gpu_names_) devices.insert(id);
    // Each part names its table, so that a bad value is reported where it is.
    Statement device_query =
        db_.prepare(devices_of("CUPTI_ACTIVITY_KIND_KERNEL", "") + " UNION " +
                    devices_of("CUPTI_ACTIVITY_KIND_MEMCPY", "") + " UNION " +
                    devices_of("CUPTI_ACTIVITY_KIND_MEMSET", "") + " UNION " +
                    devices_of("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", " AND deviceId IS NOT NULL") +
                    " UNION " + devices_of("memory_events", " AND deviceId >= 0") +
                    " UNION SELECT deviceId, 'device_samples' FROM device_samples WHERE 1" +
                    scope_.and_sample_capture());
    scope_.bind(device_query);
    while (device_query.step()) devices.insert(checked_device(device_query, 0, 1));

    for (int32_t device : devices) {
      auto name = gpu_names_.find(device);
      std::string label = group_label_ + "GPU " + std::to_string(device);
      if (name != gpu_names_.end() && !name->second.empty()) label += ": " + name->second;
      emit(event_.begin("M")
               .field("name", "process_name")
               .field("pid", group_pid_base_ + gpu_pid(device))
               .field("tid", int64_t{0})
               .time("ts", stats_.base_time_ns)
               .arg("name", label)
               .end());
      emit(event_.begin("M")
               .field("name", "process_labels")
               .field("pid", group_pid_base_ + gpu_pid(device))
               .field("tid", int64_t{0})
               .time("ts", stats_.base_time_ns)
               .arg("labels", "GPU")
               .end());
      // Kineto sorts GPU processes after the host ones by a large sort index.
      emit(event_.begin("M")
               .field("name", "process_sort_index")
               .field("pid", group_pid_base_ + gpu_pid(device))
               .field("tid", int64_t{0})
               .time("ts", stats_.base_time_ns)
               .arg("sort_index", group_pid_base_ + int64_t{0x1000000} + device)
               .end());
    }

    auto streams_of = [&](const char* table) {
      return "SELECT deviceId, streamId" + scope_.from(db_, table);
    };
    Statement streams = db_.prepare(streams_of("CUPTI_ACTIVITY_KIND_KERNEL") + " UNION " +
                                    streams_of("CUPTI_ACTIVITY_KIND_MEMCPY") + " UNION " +
                                    streams_of("CUPTI_ACTIVITY_KIND_MEMSET") + " UNION " +
                                    streams_of("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION") +
                                    " AND deviceId IS NOT NULL AND streamId IS NOT NULL");
    scope_.bind(streams);
    while (streams.step()) {
      const auto device = checked_device(streams, 0, "activity tables");
      const int64_t stream = streams.column_int(1);
      emit(event_.begin("M")
               .field("name", "thread_name")
               .field("pid", group_pid_base_ + gpu_pid(device))
               .field("tid", stream)
               .time("ts", stats_.base_time_ns)
               .arg("name", "stream " + std::to_string(stream))
               .end());
      emit(event_.begin("M")
               .field("name", "thread_sort_index")
               .field("pid", group_pid_base_ + gpu_pid(device))
               .field("tid", stream)
               .time("ts", stats_.base_time_ns)
               .arg("sort_index", stream)
               .end());
    }

    std::unordered_map<int64_t, std::string> commands;
    for (const store::Process& process : reader_.processes(scope_.capture_id))
      if (process.command) commands.emplace(process.pid, basename_of_command(*process.command));
    for (int64_t pid : host_pids_) {
      auto command = commands.find(pid);
      std::string label =
          group_label_ + (command != commands.end() && !command->second.empty()
                              ? command->second + " (pid " + std::to_string(pid) + ")"
                              : "process " + std::to_string(pid));
      emit(event_.begin("M")
               .field("name", "process_name")
               .field("pid", group_pid_base_ + pid)
               .field("tid", int64_t{0})
               .time("ts", stats_.base_time_ns)
               .arg("name", label)
               .end());
    }
    for (const auto& [pid, tid] : host_threads_) {
      emit(event_.begin("M")
               .field("name", "thread_name")
               .field("pid", group_pid_base_ + pid)
               .field("tid", tid)
               .time("ts", stats_.base_time_ns)
               .arg("name", "thread " + std::to_string(tid))
               .end());
    }
  }

  // Names for tracks that only show up while streaming (iterations, unattributed events).
  void write_late_names() {
    for (int64_t pid : iteration_pids_)
      emit(event_.begin("M")
               .field("name", "thread_name")
               .field("pid", group_pid_base_ + pid)
               .field("tid", kIterationsTid)
               .time("ts", stats_.base_time_ns)
               .arg("name", "iterations")
               .end());
    if (used_unattributed_pid_)
      emit(event_.begin("M")
               .field("name", "process_name")
               .field("pid", group_pid_base_ + kUnattributedPid)
               .field("tid", int64_t{0})
               .time("ts", stats_.base_time_ns)
               .arg("name", group_label_ + "unattributed (no process recorded)")
               .end());
  }

  int64_t host_pid(const std::optional<int64_t>& global_pid) {
    if (global_pid) return store::pid_of(*global_pid);
    used_unattributed_pid_ = true;
    return kUnattributedPid;
  }

  // The scope's rows of `table`, every column as its description says.
  TableRows rows_of(const columns::Table& table, const std::string& order = "") const {
    return TableRows(db_, table, scope_.from(db_, std::string(table.name)) + order,
                     scope_.capture_id);
  }
  // Every column the description marks as an arg, then the event is complete.
  void emit_with_args(const TableRows& rows) {
    args_.clear();
    rows.append_args(args_, strings_);
    emit(event_.args_raw(args_).end());
  }

  // What a row becomes beyond its columns: the event's category and name and the track it is on.
  // The rest of the event comes from the table's description (write_rows).
  struct Span {
    std::string_view cat, name;
    int64_t pid = 0, tid = 0;
  };
  // On the GPU's process, the stream's thread.
  static Span on_stream(const TableRows& rows, int device, int stream, std::string_view cat,
                        std::string_view name) {
    return {cat, name, gpu_pid(rows.int32(device)), rows.integer(stream)};
  }
  // On the host thread of an nsys-encoded globalTid.
  static Span on_thread(int64_t global_tid, std::string_view cat, std::string_view name) {
    return {cat, name, store::pid_of(global_tid), store::tid_of(global_tid)};
  }
  static constexpr auto kNoExtraArgs = [](const TableRows&) {};

  // The one writer of the tables whose rows are spans (or, without an end, instants): one event per
  // row of `t` in the scope, its ts and dur from the description's start and end columns, its
  // category, name and track from `place`, args the table computes (`extra`) and then every column
  // the description marks as an arg (emit_with_args). `count` is the table's figure in the stats.
  template <class Place, class Extra = decltype(kNoExtraArgs)>
  void write_rows(const columns::Table& t, int64_t& count, const Place& place,
                  const Extra& extra = kNoExtraArgs) {
    const int start_column = t.index("start"), end_column = t.index("end");
    TableRows rows = rows_of(t);
    while (rows.step()) {
      const Span span = place(rows);
      const int64_t start = rows.integer(start_column);
      const std::optional<int64_t> end = rows.optional_integer(end_column);
      event_.begin(end ? "X" : "i").field("cat", span.cat).field("name", span.name);
      if (!end) event_.field("s", "t");
      event_.field("pid", group_pid_base_ + span.pid).field("tid", span.tid).time("ts", start);
      if (end) event_.duration(start, *end);
      extra(rows);
      emit_with_args(rows);
      ++count;
    }
  }

  void write_kernels() {
    constexpr const columns::Table& t = kKernelTable;
    constexpr int kDevice = column_index(t, "deviceId"), kStream = column_index(t, "streamId"),
                  kName = column_index(t, "demangledName"),
                  kStaticShared = column_index(t, "staticSharedMemory"),
                  kDynamicShared = column_index(t, "dynamicSharedMemory");
    write_rows(
        t, stats_.kernels,
        [&](const TableRows& rows) {
          return on_stream(rows, kDevice, kStream, "kernel", text(rows.integer(kName)));
        },
        [&](const TableRows& rows) {
          // Kineto's total besides the two parts the description exports.
          if (!rows.is_null(kStaticShared) || !rows.is_null(kDynamicShared))
            event_.arg("shared memory", rows.integer(kStaticShared) + rows.integer(kDynamicShared));
        });
  }

  void write_memcpys() {
    constexpr const columns::Table& t = kMemcpyTable;
    constexpr int kStart = column_index(t, "start"), kEnd = column_index(t, "end"),
                  kDevice = column_index(t, "deviceId"), kStream = column_index(t, "streamId"),
                  kBytes = column_index(t, "bytes"), kKind = column_index(t, "copyKind"),
                  kSrc = column_index(t, "srcKind"), kDst = column_index(t, "dstKind");
    write_rows(
        t, stats_.memcpys,
        [&](const TableRows& rows) {
          const int32_t src = rows.is_null(kSrc) ? store::kMemUnknown : rows.int32(kSrc);
          const int32_t dst = rows.is_null(kDst) ? store::kMemUnknown : rows.int32(kDst);
          name_ = std::string("Memcpy ") + memcpy_kind_short(rows.int32(kKind)) + " (" +
                  memory_kind_label(src) + " -> " + memory_kind_label(dst) + ")";
          return on_stream(rows, kDevice, kStream, "gpu_memcpy", name_);
        },
        [&](const TableRows& rows) {
          // bytes per ns is GB/s, the unit Kineto reports.
          const int64_t start = rows.integer(kStart), end = rows.integer(kEnd);
          if (end > start)
            event_.arg("memory bandwidth (GB/s)", static_cast<double>(rows.integer(kBytes)) /
                                                      static_cast<double>(end - start));
        });
  }

  void write_memsets() {
    constexpr const columns::Table& t = kMemsetTable;
    constexpr int kDevice = column_index(t, "deviceId"), kStream = column_index(t, "streamId"),
                  kKind = column_index(t, "memKind");
    write_rows(t, stats_.memsets, [&](const TableRows& rows) {
      const int32_t kind = rows.is_null(kKind) ? store::kMemUnknown : rows.int32(kKind);
      name_ = std::string("Memset (") + memory_kind_label(kind) + ")";
      return on_stream(rows, kDevice, kStream, "gpu_memset", name_);
    });
  }

  void write_runtime_calls() {
    constexpr const columns::Table& t = kRuntimeTable;
    constexpr int kClass = column_index(t, "eventClass"), kTid = column_index(t, "globalTid"),
                  kName = column_index(t, "nameId");
    write_rows(t, stats_.runtime_calls, [&](const TableRows& rows) {
      const bool driver = rows.integer(kClass) == static_cast<int64_t>(store::ApiClass::driver);
      return on_thread(rows.integer(kTid), driver ? "cuda_driver" : "cuda_runtime",
                       text(rows.integer(kName)));
    });
  }

  void write_syncs() {
    constexpr const columns::Table& t = kSyncTable;
    constexpr int kDevice = column_index(t, "deviceId"), kStream = column_index(t, "streamId"),
                  kPid = column_index(t, "globalPid"), kTid = column_index(t, "globalTid"),
                  kType = column_index(t, "syncType");
    const char* name = nullptr;
    write_rows(
        t, stats_.syncs,
        [&](const TableRows& rows) {
          name = sync_name(rows.int32(kType));
          // On the stream's track when the wait concerns a stream, else on the waiting thread.
          if (!rows.is_null(kDevice) && !rows.is_null(kStream))
            return on_stream(rows, kDevice, kStream, "cuda_sync", name);
          if (!rows.is_null(kTid)) return on_thread(rows.integer(kTid), "cuda_sync", name);
          if (!rows.is_null(kDevice))
            return Span{"cuda_sync", name, gpu_pid(rows.int32(kDevice)), 0};
          return Span{"cuda_sync", name, host_pid(rows.optional_integer(kPid)), 0};
        },
        [&](const TableRows&) { event_.arg("cuda_sync_kind", name); });
  }

  void write_nvtx_events() {
    constexpr const columns::Table& t = kNvtxTable;
    constexpr int kText = column_index(t, "text"), kTextId = column_index(t, "textId"),
                  kTid = column_index(t, "globalTid");
    write_rows(t, stats_.nvtx_events, [&](const TableRows& rows) {
      // nsys keeps short text inline and registered strings in StringIds.
      name_ = !rows.is_null(kText)     ? rows.text(kText)
              : !rows.is_null(kTextId) ? std::string(text(rows.integer(kTextId)))
                                       : std::string();
      if (rows.is_null(kTid)) return Span{"nvtx", name_, host_pid(std::nullopt), 0};
      return on_thread(rows.integer(kTid), "nvtx", name_);
    });
  }

  void write_cpu_ops() {
    constexpr const columns::Table& t = kCpuOpsTable;
    constexpr int kTid = column_index(t, "globalTid"), kName = column_index(t, "nameId"),
                  kCategory = column_index(t, "category");
    std::string category;
    write_rows(t, stats_.cpu_ops, [&](const TableRows& rows) {
      category = rows.text(kCategory);
      return on_thread(rows.integer(kTid), category, text(rows.integer(kName)));
    });
  }

  // One "s"/"f" pair per launch and GPU activity that share a correlation id. The join lets SQLite
  // pair them (an index or an automatic index), so the exporter keeps no id table in memory.
  void write_flows() {
    const bool several_captures = grouped_ || (!scope_.capture_id && reader_.captures().size() > 1);
    for (const char* table : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                              "CUPTI_ACTIVITY_KIND_MEMSET"}) {
      // Each side is the scope's rows of its table (scope_.from); SQLite flattens the two
      // subqueries where they are plain filters.
      Statement pairs = db_.prepare(
          "SELECT r.globalTid, r.start, g.deviceId, g.streamId, g.start, r.correlationId, "
          "r.captureId FROM (SELECT r.*" +
          scope_.from(db_, "CUPTI_ACTIVITY_KIND_RUNTIME", "r") +
          " AND r.correlationId IS NOT NULL) AS r JOIN (SELECT g.*" + scope_.from(db_, table, "g") +
          ") AS g ON g.correlationId = r.correlationId AND g.captureId = r.captureId");
      scope_.bind(pairs);
      while (pairs.step()) {
        const int64_t global_tid = pairs.column_int(0);
        // Correlation ids restart in every capture; keep flow ids unique across captures (ids of
        // 2^40 and captures of 2^22 or more are refused rather than made to collide).
        const int64_t correlation =
            several_captures ? store::checked_int(pairs, 5, "", table, -1, "correlationId", 0,
                                                  kMaxFlowCorrelation)
                             : pairs.column_int(5);
        const int64_t id = several_captures ? store::checked_int(pairs, 6, "", table, -1,
                                                                 "captureId", 0, kMaxFlowCapture) *
                                                      (kMaxFlowCorrelation + 1) +
                                                  correlation
                                            : correlation;
        emit(event_.begin("s")
                 .field("id", id)
                 .field("pid", group_pid_base_ + store::pid_of(global_tid))
                 .field("tid", store::tid_of(global_tid))
                 .time("ts", pairs.column_int(1))
                 .field("cat", "ac2g")
                 .field("name", "ac2g")
                 .end());
        emit(event_.begin("f")
                 .field("id", id)
                 .field("pid", group_pid_base_ + gpu_pid(checked_device(pairs, 2, table)))
                 .field("tid", pairs.column_int(3))
                 .time("ts", pairs.column_int(4))
                 .field("cat", "ac2g")
                 .field("name", "ac2g")
                 .field("bp", "e")
                 .end());
        ++stats_.flows;
      }
    }
  }

  void write_device_samples() {
    constexpr const columns::Table& t = kDeviceSamplesTable;
    constexpr int kTs = column_index(t, "ts"), kDevice = column_index(t, "deviceId"),
                  kMetric = column_index(t, "metric_id"), kValue = column_index(t, "value");
    // A counter event's args are its series: the sample is one value, no other column.
    TableRows rows(db_, t, " FROM device_samples WHERE 1" + scope_.and_sample_capture());
    std::string metric;
    while (rows.step()) {
      metric = text(rows.integer(kMetric));
      event_.begin("C")
          .field("cat", "device_sample")
          .field("name", metric)
          .field("pid", group_pid_base_ + gpu_pid(rows.int32(kDevice)))
          .field("tid", int64_t{0})
          .time("ts", rows.integer(kTs))
          .arg(metric, rows.real(kValue));
      emit(event_.end());
      ++stats_.device_samples;
    }
  }

  // Allocated memory over time as a counter per device, plus Kineto's "[memory]" instants. When
  // the source gave no running total, the counter is the running sum of the event sizes.
  void write_memory_events() {
    constexpr const columns::Table& t = kMemoryEventsTable;
    constexpr int kTs = column_index(t, "ts"), kPid = column_index(t, "globalPid"),
                  kDevice = column_index(t, "deviceId"), kBytes = column_index(t, "bytes"),
                  kAllocated = column_index(t, "total_allocated");
    TableRows rows = rows_of(t, " ORDER BY ts");
    std::map<std::pair<int64_t, int32_t>, int64_t> running;  // (pid, device) -> bytes allocated
    std::string counter_name;
    while (rows.step()) {
      const int64_t ts = rows.integer(kTs);
      const int32_t device = rows.int32(kDevice);
      const int64_t bytes = rows.integer(kBytes);
      const auto total_allocated = rows.optional_integer(kAllocated);
      const int64_t pid = host_pid(rows.optional_integer(kPid));
      int64_t& sum = running[{pid, device}];
      // Sizes come from the file: a sum that overflows is refused, not wrapped.
      if (total_allocated)
        sum = *total_allocated;
      else if (__builtin_add_overflow(sum, bytes, &sum))
        throw InputError(reader_.database().path(), "table memory_events",
                         "the running sum of bytes overflows 64 bits (the database is corrupt)");

      // One counter per allocating process on each GPU's track, so that co-located jobs (the
      // sharer's lanes) show as separate lines; host memory goes on the process itself.
      counter_name = device >= 0 ? "Memory allocated by pid " + std::to_string(pid)
                                 : std::string("Host memory allocated");
      const int64_t counter_pid = device >= 0 ? gpu_pid(device) : pid;
      event_.begin("C")
          .field("cat", "memory")
          .field("name", counter_name)
          .field("pid", group_pid_base_ + counter_pid)
          .field("tid", int64_t{0})
          .time("ts", ts)
          .arg("allocated bytes", sum);
      emit(event_.end());
      if (options_.memory_instants) {
        // Only what the source recorded (NULL columns are left out), so that a re-import gives
        // back the same row.
        event_.begin("i")
            .field("cat", "cpu_instant_event")
            .field("name", "[memory]")
            .field("s", "t")
            .field("pid", group_pid_base_ + pid)
            .field("tid", pid)
            .time("ts", ts)
            .arg("Device Type", device >= 0 ? kDeviceTypeCuda : kDeviceTypeCpu);
        emit_with_args(rows);
      }
      ++stats_.memory_events;
    }
  }

  // Queue length per stream and copy bandwidth per kind (analysis_counters.h): computed from the
  // capture as the analyzer loads it, since they are series over several tables, not rows.
  void write_analysis_counter_tracks() {
    std::optional<int64_t> capture_id = scope_.capture_id;
    if (!capture_id) {
      const std::vector<store::Capture> captures = reader_.captures();
      if (captures.size() != 1) return;  // several captures are exported one group at a time
      capture_id = captures.front().id;
    }
    const analyzer::CaptureData data =
        analyzer::load_capture(reader_, *capture_id, {}, analysis_counter_parts());
    const AnalysisCounterStats counted = write_analysis_counters(
        data, event_, group_pid_base_, [this](std::string_view e) { emit(e); });
    stats_.queue_length_points += counted.queue_length_points;
    stats_.bandwidth_points += counted.bandwidth_points;
  }

  void write_iterations() {
    constexpr const columns::Table& t = kIterationsTable;
    constexpr int kPid = column_index(t, "globalPid"), kStep = column_index(t, "step");
    write_rows(t, stats_.iterations, [&](const TableRows& rows) {
      const int64_t pid = host_pid(rows.optional_integer(kPid));
      iteration_pids_.insert(pid);
      name_ = "Iteration " + std::to_string(rows.integer(kStep));
      return Span{"iteration", name_, pid, kIterationsTid};
    });
  }

  const store::Reader& reader_;
  const store::Database& db_;
  const ChromeExportOptions& options_;
  Scope scope_;
  const std::unordered_map<int64_t, std::string>& strings_;
  EventBuilder event_;
  ChromeTraceFile* file_ = nullptr;
  ChromeExportStats stats_;
  int64_t next_progress_ = 0;
  std::map<int32_t, std::string> gpu_names_;
  std::set<int64_t> host_pids_;
  std::set<std::pair<int64_t, int64_t>> host_threads_;
  std::set<int64_t> iteration_pids_;
  bool used_unattributed_pid_ = false;
  // Process groups of a several-capture export (run()): the k-th capture's pids are offset by
  // k * kGroupPidStride (above every Linux pid and kUnattributedPid), its names prefixed.
  static constexpr int64_t kGroupPidStride = int64_t{1} << 25;
  bool grouped_ = false;
  int64_t group_pid_base_ = 0;
  std::string group_label_;
  std::string args_;  // the args of the event being written (reused)
  std::string name_;  // the name of the event being written, where it is made (reused)
};

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string finding_event_json(const store::Finding& finding, int64_t base_time_ns,
                               int64_t pid_base) {
  EventBuilder event(base_time_ns);
  event.begin("i").field("cat", "finding").field("name", finding.severity + ": " + finding.rule);
  if (finding.deviceId) {
    event.field("s", "p")
        .field("pid", pid_base + gpu_pid(*finding.deviceId))
        .field("tid", int64_t{0});
  } else {
    event.field("s", "g").field("pid", int64_t{0}).field("tid", int64_t{0});
  }
  event.time("ts", finding.window_start.value_or(base_time_ns));
  event.arg("finding id", finding.id).arg("capture", finding.captureId);
  event.arg("rule", finding.rule).arg("severity", finding.severity);
  event.arg("impact_ns", finding.impact_ns);
  event.arg("impact (ms)", static_cast<double>(finding.impact_ns) / 1e6);
  if (finding.deviceId) event.arg("device", int64_t{*finding.deviceId});
  if (finding.window_start) event.arg("window start ns", *finding.window_start);
  if (finding.window_end) event.arg("window end ns", *finding.window_end);
  if (finding.window_start && finding.window_end) {
    std::string duration;
    append_microseconds(duration, *finding.window_end - *finding.window_start);
    event.arg_raw_json("window (us)", duration);
  }
  // Evidence is JSON text from the analyzer; embed it as an object when it parses (re-dumped, so
  // whatever it holds comes out valid), else keep it as a string.
  nlohmann::json evidence = nlohmann::json::parse(finding.evidence_json, nullptr, false);
  if (evidence.is_discarded())
    event.arg("evidence", finding.evidence_json);
  else
    event.arg_raw_json("evidence",
                       evidence.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  event.arg("recommendation", finding.recommendation);
  return std::string(event.end());
}

int64_t append_findings_events(EventSink& sink, const std::vector<store::Finding>& findings,
                               int64_t base_time_ns, int64_t pid_base) {
  for (const store::Finding& finding : findings)
    sink.write_event(finding_event_json(finding, base_time_ns, pid_base));
  return static_cast<int64_t>(findings.size());
}

ChromeExportStats export_chrome(const store::Reader& reader, const std::string& out_path,
                                const ChromeExportOptions& options) {
  Scope scope;
  if (options.capture_id) {
    scope.capture_id = options.capture_id;
    scope.capture = reader.capture(*options.capture_id);
    if (!scope.capture) {
      std::string known;
      for (const store::Capture& capture : reader.captures())
        known += (known.empty() ? "" : ", ") + std::to_string(capture.id);
      throw InputError(reader.database().path(), "table captures",
                       "no capture with id " + std::to_string(*options.capture_id) +
                           " (captures in this file: " + (known.empty() ? "none" : known) + ")");
    }
  }
  const bool gzip = options.gzip.value_or(ends_with(out_path, ".gz"));

  store::AtomicOutput output(out_path, options.replace_existing ? store::AtomicOutput::Replace::yes
                                                                : store::AtomicOutput::Replace::no);
  ChromeExportStats stats;
  try {
    ChromeTraceFile file(output.temp_path(), gzip, options.gzip_level);
    ChromeExporter exporter(reader, options, std::move(scope));
    try {
      stats = exporter.run(file);
    } catch (const TimeOutOfRange& bad) {
      throw InputError(reader.database().path(), "an event's time",
                       std::to_string(bad.value) +
                           " ns is out of range (expected a time within ±2^62 ns of the epoch, "
                           "so that differences fit in 64 bits; the database is corrupt)");
    }
  } catch (const Error& e) {
    // Writing failed (a full disk, a file size limit): the error names the output, not its
    // temporary name.
    const std::string message = e.what();
    if (message.find(output.temp_path()) == std::string::npos) throw;
    throw Error(common::with_output_name(message, output.temp_path(), out_path));
  }
  output.commit();
  return stats;
}

}  // namespace fleetscope::exporter
