#include "fleetscope/store/writer.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <thread>
#include <unordered_map>

#include "fleetscope/store/error.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::store {

struct Writer::Batch {
  std::vector<Kernel> kernels;
  std::vector<Memcpy> memcpys;
  std::vector<Memset> memsets;
  std::vector<RuntimeCall> runtime_calls;
  std::vector<Sync> syncs;
  std::vector<NvtxEvent> nvtx;
  std::vector<CpuOp> cpu_ops;
  std::vector<Iteration> iterations;
  std::vector<MemoryEvent> memory_events;
  std::vector<DeviceSample> device_samples;
  std::vector<ExternalCorrelation> external_correlations;
  size_t rows = 0;
  // Empties the batch for reuse; the vectors keep their capacity (no regrowth, no fresh pages to
  // fault in for the next batch).
  void clear() {
    kernels.clear();
    memcpys.clear();
    memsets.clear();
    runtime_calls.clear();
    syncs.clear();
    nvtx.clear();
    cpu_ops.clear();
    iterations.clear();
    memory_events.clear();
    device_samples.clear();
    external_correlations.clear();
    rows = 0;
  }
};

namespace {

// Column lists per table. Rows are inserted kRowsPerStatement at a time with one multi-row
// INSERT (fewer statement executions per row is where SQLite bulk-load time goes), the remainder
// one by one.
constexpr int kRowsPerStatement = 32;

struct TableSpec {
  const char* head;  // "INSERT INTO T(c1, c2, ...)"
  int columns;
};
const TableSpec kKernelSpec{
    "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, contextId, streamId, "
    "correlationId, globalPid, demangledName, shortName, gridX, gridY, gridZ, blockX, blockY, "
    "blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, "
    "graphId, graphNodeId, launchType, blocksPerSm, warpsPerSm, estOccupancy, captureId)",
    26};
const TableSpec kMemcpySpec{
    "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId, contextId, streamId, "
    "correlationId, globalPid, bytes, copyKind, srcKind, dstKind, srcDeviceId, dstDeviceId, "
    "graphNodeId, captureId)",
    15};
const TableSpec kMemsetSpec{
    "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET(start, end, deviceId, contextId, streamId, "
    "correlationId, globalPid, value, bytes, memKind, graphNodeId, captureId)",
    12};
const TableSpec kRuntimeSpec{
    "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME(start, end, eventClass, globalTid, correlationId, "
    "nameId, returnValue, cbid, captureId)",
    9};
const TableSpec kSyncSpec{
    "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION(start, end, deviceId, contextId, streamId, "
    "correlationId, globalPid, globalTid, syncType, eventId, captureId)",
    11};
const TableSpec kNvtxSpec{
    "INSERT INTO NVTX_EVENTS(start, end, eventType, rangeId, text, textId, domainId, globalTid, "
    "captureId)",
    9};
const TableSpec kCpuOpSpec{
    "INSERT INTO cpu_ops(start, end, globalTid, nameId, category, externalId, captureId)", 7};
const TableSpec kIterationSpec{
    "INSERT OR REPLACE INTO iterations(captureId, globalPid, step, start, end, source)", 6};
const TableSpec kMemoryEventSpec{
    "INSERT INTO memory_events(ts, captureId, globalPid, deviceId, address, bytes, "
    "total_allocated, total_reserved)",
    8};
const TableSpec kExternalCorrelationSpec{
    "INSERT INTO external_correlation(captureId, correlationId, externalKind, externalId)", 4};
const TableSpec kDeviceSampleSpec{
    "INSERT INTO device_samples(ts, host_id, deviceId, metric_id, value, captureId)", 6};

// Tables whose rows record their longest duration in event_extent (reader.h's time windows).
enum ExtentTable : int {
  kKernelExtent,
  kMemcpyExtent,
  kMemsetExtent,
  kRuntimeExtent,
  kSyncExtent,
  kNvtxExtent,
  kCpuOpExtent
};
constexpr const char* kExtentTableNames[] = {"CUPTI_ACTIVITY_KIND_KERNEL",
                                             "CUPTI_ACTIVITY_KIND_MEMCPY",
                                             "CUPTI_ACTIVITY_KIND_MEMSET",
                                             "CUPTI_ACTIVITY_KIND_RUNTIME",
                                             "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
                                             "NVTX_EVENTS",
                                             "cpu_ops"};

std::string insert_sql(const TableSpec& spec, int rows) {
  std::string one = "(";
  for (int c = 0; c < spec.columns; ++c) one += c ? ",?" : "?";
  one += ")";
  std::string sql = std::string(spec.head) + " VALUES ";
  for (int r = 0; r < rows; ++r) sql += (r ? "," : "") + one;
  return sql;
}

// Asks the kernel to begin writing the file's dirty pages (asynchronously; errors are for the
// later fsync to report).
void start_writeback(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  ::close(fd);
}

}  // namespace

struct Writer::Impl {
  Impl(Database database, WriterOptions opts) : db(std::move(database)), options(opts) {}

  Database db;
  WriterOptions options;
  std::string path;

  // Producer side, guarded by `mu`.
  std::mutex mu;
  std::condition_variable work_ready, space_ready, idle;
  std::unique_ptr<Batch> current = std::make_unique<Batch>();
  std::deque<std::unique_ptr<Batch>> queue;
  std::vector<std::unique_ptr<Batch>> spare;  // written batches, emptied, for reuse
  static constexpr size_t kSpareBatches = 2;
  bool in_flight = false;
  bool stopping = false;
  bool closed = false;
  std::exception_ptr error;
  WriterStats stats;

  // Database side, guarded by `db_mu` (the background thread and synchronous calls).
  std::mutex db_mu;
  std::unordered_map<std::string, int64_t> string_ids;
  int64_t next_string_id = 1;
  struct KernelNames {
    int64_t demangled, short_name;
  };
  // Demangled kernel names run to kilobytes (templated CUTLASS/cuDNN kernels): hashing every byte
  // of each on every lookup was visible; a sample of the name (its length and 16 words spread
  // over it) picks the bucket, equality still compares it whole.
  struct SampledHash {
    size_t operator()(const std::string& s) const noexcept {
      if (s.size() <= 128) return std::hash<std::string>{}(s);
      uint64_t h = s.size() * 0x9E3779B97F4A7C15ULL;
      for (size_t i = 0; i < 16; ++i) {
        uint64_t w = 0;
        std::memcpy(&w, s.data() + (s.size() - 8) * i / 15, 8);
        h = (h ^ w) * 0x100000001B3ULL;
        h ^= h >> 29;
      }
      return static_cast<size_t>(h);
    }
  };
  std::unordered_map<std::string, KernelNames, SampledHash> kernel_names;
  // (table, capture) -> max duration. Rows come in long runs of one table and one capture: the
  // last slot is remembered, so a row costs a compare, not a map lookup.
  std::map<std::pair<int, int64_t>, int64_t> extents;
  int last_extent_table = -1;
  int64_t last_extent_capture = 0;
  int64_t* last_extent = nullptr;
  std::optional<Statement> insert_string;
  // Prepared statements per table: [0] one row, [1] kRowsPerStatement rows.
  std::map<const TableSpec*, std::pair<std::optional<Statement>, std::optional<Statement>>> inserts;

  std::thread thread;

  void load_strings() {
    Statement s = db.prepare("SELECT id, value FROM StringIds");
    while (s.step()) {
      int64_t id = s.column_int(0);
      string_ids.emplace(s.column_text(1), id);
      next_string_id = std::max(next_string_id, id + 1);
    }
  }

  int64_t intern_locked(const std::string& text) {
    auto it = string_ids.find(text);
    if (it != string_ids.end()) return it->second;
    if (!insert_string)
      insert_string.emplace(db.raw(), "INSERT INTO StringIds(id, value) VALUES (?, ?)");
    int64_t id = next_string_id++;
    insert_string->bind(1, id).bind(2, text).execute();
    string_ids.emplace(text, id);
    return id;
  }

  // start/end come from files (importers) and may be anything: the span saturates instead of
  // overflowing (found by fuzz_nsys_sqlite with INT64_MIN/INT64_MAX times).
  void note_extent(ExtentTable table, int64_t capture, int64_t start, int64_t end) {
    int64_t duration = 0;
    if (__builtin_sub_overflow(end, start, &duration)) duration = INT64_MAX;
    if (!last_extent || table != last_extent_table || capture != last_extent_capture) {
      last_extent = &extents[{table, capture}];  // std::map: the address stays valid
      last_extent_table = table;
      last_extent_capture = capture;
    }
    if (duration > *last_extent) *last_extent = duration;
  }

  // Inserts `rows` through `bind(statement, first_parameter_index, row)`, which binds one row's
  // columns starting at that index.
  template <class Row, class Bind>
  void insert_rows(const TableSpec& spec, const std::vector<Row>& rows, Bind&& bind) {
    if (rows.empty()) return;
    auto& [single, multi] = inserts[&spec];
    size_t i = 0;
    if (rows.size() >= static_cast<size_t>(kRowsPerStatement)) {
      if (!multi) multi.emplace(db.raw(), insert_sql(spec, kRowsPerStatement));
      for (; i + kRowsPerStatement <= rows.size(); i += kRowsPerStatement) {
        for (int r = 0; r < kRowsPerStatement; ++r)
          bind(*multi, 1 + r * spec.columns, rows[i + static_cast<size_t>(r)]);
        multi->step();
        multi->reset_keep_bindings();
      }
    }
    if (i < rows.size() && !single) single.emplace(db.raw(), insert_sql(spec, 1));
    for (; i < rows.size(); ++i) {
      bind(*single, 1, rows[i]);
      single->step();
      single->reset_keep_bindings();
    }
  }

  void write_batch(Batch& b) {
    db.exec("BEGIN");
    try {
      write_rows(b);
      db.exec("COMMIT");
    } catch (...) {
      sqlite3_exec(db.raw(), "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  KernelNames kernel_names_for(const Kernel& k) {
    if (k.shortName.empty()) {
      auto it = kernel_names.find(k.demangledName);
      if (it != kernel_names.end()) return it->second;
      KernelNames names{intern_locked(k.demangledName),
                        intern_locked(short_kernel_name(k.demangledName))};
      kernel_names.emplace(k.demangledName, names);
      return names;
    }
    return {intern_locked(k.demangledName), intern_locked(k.shortName)};
  }

  void write_rows(Batch& b) {
    // Consecutive kernels very often share a name: skip the hash lookup then.
    const Kernel* previous = nullptr;
    KernelNames names{};
    insert_rows(kKernelSpec, b.kernels, [&](Statement& s, int p, const Kernel& k) {
      if (!previous || previous->demangledName != k.demangledName ||
          previous->shortName != k.shortName)
        names = kernel_names_for(k);
      previous = &k;
      s.bind(p, k.start)
          .bind(p + 1, k.end)
          .bind(p + 2, int64_t{k.deviceId})
          .bind(p + 3, k.contextId);
      s.bind(p + 4, int64_t{k.streamId}).bind(p + 5, k.correlationId).bind(p + 6, k.globalPid);
      s.bind(p + 7, names.demangled).bind(p + 8, names.short_name);
      s.bind(p + 9, int64_t{k.gridX}).bind(p + 10, int64_t{k.gridY}).bind(p + 11, int64_t{k.gridZ});
      s.bind(p + 12, int64_t{k.blockX})
          .bind(p + 13, int64_t{k.blockY})
          .bind(p + 14, int64_t{k.blockZ});
      s.bind(p + 15, k.registersPerThread).bind(p + 16, k.staticSharedMemory);
      s.bind(p + 17, k.dynamicSharedMemory).bind(p + 18, k.localMemoryPerThread);
      s.bind(p + 19, k.graphId).bind(p + 20, k.graphNodeId).bind(p + 21, k.launchType);
      s.bind(p + 22, k.blocksPerSm).bind(p + 23, k.warpsPerSm).bind(p + 24, k.estOccupancy);
      s.bind(p + 25, k.captureId);
      note_extent(kKernelExtent, k.captureId, k.start, k.end);
    });
    insert_rows(kMemcpySpec, b.memcpys, [&](Statement& s, int p, const Memcpy& m) {
      s.bind(p, m.start)
          .bind(p + 1, m.end)
          .bind(p + 2, int64_t{m.deviceId})
          .bind(p + 3, m.contextId);
      s.bind(p + 4, int64_t{m.streamId}).bind(p + 5, m.correlationId).bind(p + 6, m.globalPid);
      s.bind(p + 7, m.bytes).bind(p + 8, int64_t{m.copyKind}).bind(p + 9, m.srcKind);
      s.bind(p + 10, m.dstKind).bind(p + 11, m.srcDeviceId).bind(p + 12, m.dstDeviceId);
      s.bind(p + 13, m.graphNodeId).bind(p + 14, m.captureId);
      note_extent(kMemcpyExtent, m.captureId, m.start, m.end);
    });
    insert_rows(kMemsetSpec, b.memsets, [&](Statement& s, int p, const Memset& m) {
      s.bind(p, m.start)
          .bind(p + 1, m.end)
          .bind(p + 2, int64_t{m.deviceId})
          .bind(p + 3, m.contextId);
      s.bind(p + 4, int64_t{m.streamId}).bind(p + 5, m.correlationId).bind(p + 6, m.globalPid);
      s.bind(p + 7, m.value)
          .bind(p + 8, m.bytes)
          .bind(p + 9, m.memKind)
          .bind(p + 10, m.graphNodeId);
      s.bind(p + 11, m.captureId);
      note_extent(kMemsetExtent, m.captureId, m.start, m.end);
    });
    insert_rows(kRuntimeSpec, b.runtime_calls, [&](Statement& s, int p, const RuntimeCall& r) {
      s.bind(p, r.start)
          .bind(p + 1, r.end)
          .bind(p + 2, int64_t{static_cast<int32_t>(r.eventClass)});
      s.bind(p + 3, r.globalTid).bind(p + 4, r.correlationId).bind(p + 5, intern_locked(r.name));
      s.bind(p + 6, r.returnValue).bind(p + 7, r.cbid).bind(p + 8, r.captureId);
      note_extent(kRuntimeExtent, r.captureId, r.start, r.end);
    });
    insert_rows(kSyncSpec, b.syncs, [&](Statement& s, int p, const Sync& y) {
      s.bind(p, y.start).bind(p + 1, y.end).bind(p + 2, y.deviceId).bind(p + 3, y.contextId);
      s.bind(p + 4, y.streamId).bind(p + 5, y.correlationId).bind(p + 6, y.globalPid);
      s.bind(p + 7, y.globalTid).bind(p + 8, int64_t{y.syncType}).bind(p + 9, y.eventId);
      s.bind(p + 10, y.captureId);
      note_extent(kSyncExtent, y.captureId, y.start, y.end);
    });
    insert_rows(kNvtxSpec, b.nvtx, [&](Statement& s, int p, const NvtxEvent& n) {
      s.bind(p, n.start)
          .bind(p + 1, n.end)
          .bind(p + 2, int64_t{n.eventType})
          .bind(p + 3, n.rangeId);
      s.bind(p + 4, n.text).bind(p + 5, intern_locked(n.text)).bind(p + 6, n.domainId);
      s.bind(p + 7, n.globalTid).bind(p + 8, n.captureId);
      note_extent(kNvtxExtent, n.captureId, n.start, n.end ? *n.end : n.start);
    });
    insert_rows(kCpuOpSpec, b.cpu_ops, [&](Statement& s, int p, const CpuOp& c) {
      s.bind(p, c.start)
          .bind(p + 1, c.end)
          .bind(p + 2, c.globalTid)
          .bind(p + 3, intern_locked(c.name));
      s.bind(p + 4, c.category).bind(p + 5, c.externalId).bind(p + 6, c.captureId);
      note_extent(kCpuOpExtent, c.captureId, c.start, c.end);
    });
    // Iterations may repeat a (capture, pid, step) key; one row per statement keeps "last wins".
    for (const Iteration& it : b.iterations) {
      insert_rows(kIterationSpec, std::vector<Iteration>{it},
                  [&](Statement& s, int p, const Iteration& x) {
                    s.bind(p, x.captureId)
                        .bind(p + 1, x.globalPid)
                        .bind(p + 2, x.step)
                        .bind(p + 3, x.start);
                    s.bind(p + 4, x.end).bind(p + 5, x.source);
                  });
    }
    insert_rows(kMemoryEventSpec, b.memory_events, [&](Statement& s, int p, const MemoryEvent& m) {
      s.bind(p, m.ts)
          .bind(p + 1, m.captureId)
          .bind(p + 2, m.globalPid)
          .bind(p + 3, int64_t{m.deviceId});
      s.bind(p + 4, m.address).bind(p + 5, m.bytes).bind(p + 6, m.total_allocated);
      s.bind(p + 7, m.total_reserved);
    });
    insert_rows(
        kDeviceSampleSpec, b.device_samples, [&](Statement& s, int p, const DeviceSample& d) {
          s.bind(p, d.ts).bind(p + 1, d.host_id).bind(p + 2, int64_t{d.deviceId});
          s.bind(p + 3, intern_locked(d.metric)).bind(p + 4, d.value).bind(p + 5, d.captureId);
        });
    insert_rows(kExternalCorrelationSpec, b.external_correlations,
                [&](Statement& s, int p, const ExternalCorrelation& x) {
                  s.bind(p, x.captureId).bind(p + 1, x.correlationId);
                  s.bind(p + 2, int64_t{x.externalKind}).bind(p + 3, x.externalId);
                });
  }

  void run() {
    std::unique_lock lock(mu);
    for (;;) {
      work_ready.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty()) return;  // stopping and drained
      std::unique_ptr<Batch> batch = std::move(queue.front());
      queue.pop_front();
      in_flight = true;
      space_ready.notify_all();
      lock.unlock();
      std::exception_ptr failure;
      if (!error) {
        try {
          std::lock_guard db_lock(db_mu);
          write_batch(*batch);
        } catch (...) {
          failure = std::current_exception();
        }
      }
      const size_t rows = batch->rows;
      batch->clear();
      lock.lock();
      if (spare.size() < kSpareBatches) spare.push_back(std::move(batch));
      if (failure && !error) error = failure;
      if (!failure) {
        stats.rows_written += static_cast<int64_t>(rows);
        stats.batches += 1;
      }
      in_flight = false;
      idle.notify_all();
    }
  }

  // Caller holds `lock` on mu.
  void enqueue_current(std::unique_lock<std::mutex>& lock) {
    if (current->rows == 0) return;
    space_ready.wait(lock, [&] { return queue.size() < options.max_queued_batches || error; });
    queue.push_back(std::move(current));
    if (spare.empty()) {
      current = std::make_unique<Batch>();
    } else {
      current = std::move(spare.back());
      spare.pop_back();
    }
    work_ready.notify_one();
  }

  template <class Row>
  void add(std::vector<Row> Batch::*member, Row&& row) {
    std::unique_lock lock(mu);
    if (closed) throw Error(path + ": writer already finished");
    ((*current).*member).push_back(std::move(row));
    if (++current->rows >= options.batch_rows) enqueue_current(lock);
  }

  void flush() {
    std::unique_lock lock(mu);
    enqueue_current(lock);
    idle.wait(lock, [&] { return (queue.empty() && !in_flight) || error; });
    if (error) std::rethrow_exception(error);
  }

  void stop_thread() {
    {
      std::lock_guard lock(mu);
      stopping = true;
    }
    work_ready.notify_all();
    if (thread.joinable()) thread.join();
  }

  void finalize_statements() {
    insert_string.reset();
    inserts.clear();
  }
};

Writer::Writer(Database db, WriterOptions options)
    : impl_(std::make_unique<Impl>(std::move(db), options)) {
  impl_->path = impl_->db.path();
  // A 64 MiB page cache keeps a batch's dirty pages in memory until commit (default is 2 MiB). An
  // in-memory database's pages already live in memory: a cache in front of them would only hold
  // a second copy of every page.
  if (!impl_->db.in_memory()) impl_->db.exec("PRAGMA cache_size = -65536");
  if (options.temporary_output) {
    // No reader can see the file before AtomicOutput renames it, and a failed write discards the
    // whole file: WAL (every page written twice: WAL, then checkpoint) and syncs protect nothing.
    impl_->db.exec("PRAGMA journal_mode = OFF");
    impl_->db.exec("PRAGMA synchronous = OFF");
  }
  impl_->load_strings();
  impl_->thread = std::thread([this] { impl_->run(); });
}

Writer::~Writer() {
  if (!impl_ || impl_->closed) return;
  // No finish() was called (typically an error is unwinding): keep what was queued, skip the
  // index build, close.
  try {
    impl_->flush();
  } catch (...) {
  }
  impl_->stop_thread();
  std::lock_guard db_lock(impl_->db_mu);
  impl_->finalize_statements();
  impl_->db.close();
}

int64_t Writer::add_capture(const Capture& c) {
  flush();
  std::lock_guard db_lock(impl_->db_mu);
  Statement s = impl_->db.prepare(
      "INSERT INTO captures(kind, source, source_path, start_ns, end_ns, dropped_records, "
      "collector_overhead_ns, gpu_vendor, note) VALUES (?,?,?,?,?,?,?,?,?)");
  s.bind(1, std::string(to_string(c.kind))).bind(2, c.source).bind(3, c.source_path);
  s.bind(4, c.start_ns).bind(5, c.end_ns).bind(6, c.dropped_records);
  s.bind(7, c.collector_overhead_ns).bind(8, c.gpu_vendor).bind(9, c.note).execute();
  return sqlite3_last_insert_rowid(impl_->db.raw());
}

void Writer::update_capture(const Capture& c) {
  flush();
  std::lock_guard db_lock(impl_->db_mu);
  Statement s = impl_->db.prepare(
      "UPDATE captures SET kind=?, source=?, source_path=?, start_ns=?, end_ns=?, "
      "dropped_records=?, collector_overhead_ns=?, gpu_vendor=?, note=? WHERE id=?");
  s.bind(1, std::string(to_string(c.kind))).bind(2, c.source).bind(3, c.source_path);
  s.bind(4, c.start_ns).bind(5, c.end_ns).bind(6, c.dropped_records);
  s.bind(7, c.collector_overhead_ns).bind(8, c.gpu_vendor).bind(9, c.note).bind(10, c.id).execute();
}

int64_t Writer::add_host(const Host& h) {
  flush();
  std::lock_guard db_lock(impl_->db_mu);
  Statement s = impl_->db.prepare("INSERT INTO hosts(hostname, boot_id) VALUES (?,?)");
  s.bind(1, h.hostname).bind(2, h.boot_id).execute();
  return sqlite3_last_insert_rowid(impl_->db.raw());
}

int64_t Writer::add_workflow(const Workflow& w) {
  flush();
  std::lock_guard db_lock(impl_->db_mu);
  Statement s = impl_->db.prepare("INSERT INTO workflows(name, user, labels) VALUES (?,?,?)");
  s.bind(1, w.name).bind(2, w.user).bind(3, w.labels_json).execute();
  return sqlite3_last_insert_rowid(impl_->db.raw());
}

void Writer::upsert_process(const Process& p) {
  flush();
  std::lock_guard db_lock(impl_->db_mu);
  Statement s = impl_->db.prepare(
      "INSERT OR REPLACE INTO processes(captureId, globalPid, pid, host_id, workflow_id, rank, "
      "world_size, command, start_ns, end_ns) VALUES (?,?,?,?,?,?,?,?,?,?)");
  s.bind(1, p.captureId).bind(2, p.globalPid).bind(3, p.pid).bind(4, p.host_id);
  s.bind(5, p.workflow_id).bind(6, p.rank).bind(7, p.world_size).bind(8, p.command);
  s.bind(9, p.start_ns).bind(10, p.end_ns).execute();
}

void Writer::add_gpu(const GpuInfo& g) {
  flush();
  std::lock_guard db_lock(impl_->db_mu);
  Statement s = impl_->db.prepare(
      "INSERT OR REPLACE INTO TARGET_INFO_GPU(id, captureId, name, uuid, busLocation, totalMemory, "
      "smCount, computeMajor, computeMinor, clockRate, memoryBandwidth, maxThreadsPerBlock, "
      "maxWarpsPerSm, maxBlocksPerSm, maxRegistersPerSm, maxShmemPerSm, threadsPerWarp, vendor) "
      "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  s.bind(1, int64_t{g.id}).bind(2, g.captureId).bind(3, g.name).bind(4, g.uuid);
  s.bind(5, g.busLocation).bind(6, g.totalMemory).bind(7, g.smCount).bind(8, g.computeMajor);
  s.bind(9, g.computeMinor).bind(10, g.clockRate).bind(11, g.memoryBandwidth);
  s.bind(12, g.maxThreadsPerBlock).bind(13, g.maxWarpsPerSm).bind(14, g.maxBlocksPerSm);
  s.bind(15, g.maxRegistersPerSm).bind(16, g.maxShmemPerSm).bind(17, g.threadsPerWarp);
  s.bind(18, g.vendor).execute();
}

int64_t Writer::add_finding(const Finding& f) {
  flush();
  std::lock_guard db_lock(impl_->db_mu);
  Statement s = impl_->db.prepare(
      "INSERT INTO findings(captureId, rule, severity, deviceId, window_start, window_end, "
      "impact_ns, evidence, recommendation, created_ns) VALUES (?,?,?,?,?,?,?,?,?,?)");
  s.bind(1, f.captureId).bind(2, f.rule).bind(3, f.severity).bind(4, f.deviceId);
  s.bind(5, f.window_start).bind(6, f.window_end).bind(7, f.impact_ns).bind(8, f.evidence_json);
  s.bind(9, f.recommendation).bind(10, f.created_ns).execute();
  return sqlite3_last_insert_rowid(impl_->db.raw());
}

void Writer::delete_findings(int64_t capture_id) {
  flush();
  std::lock_guard db_lock(impl_->db_mu);
  impl_->db.prepare("DELETE FROM findings WHERE captureId = ?").bind(1, capture_id).execute();
}

int64_t Writer::intern(const std::string& text) {
  std::lock_guard db_lock(impl_->db_mu);
  return impl_->intern_locked(text);
}

void Writer::add(Kernel row) {
  impl_->add(&Batch::kernels, std::move(row));
}
void Writer::add(Memcpy row) {
  impl_->add(&Batch::memcpys, std::move(row));
}
void Writer::add(Memset row) {
  impl_->add(&Batch::memsets, std::move(row));
}
void Writer::add(RuntimeCall row) {
  impl_->add(&Batch::runtime_calls, std::move(row));
}
void Writer::add(Sync row) {
  impl_->add(&Batch::syncs, std::move(row));
}
void Writer::add(NvtxEvent row) {
  impl_->add(&Batch::nvtx, std::move(row));
}
void Writer::add(CpuOp row) {
  impl_->add(&Batch::cpu_ops, std::move(row));
}
void Writer::add(Iteration row) {
  impl_->add(&Batch::iterations, std::move(row));
}
void Writer::add(MemoryEvent row) {
  impl_->add(&Batch::memory_events, std::move(row));
}
void Writer::add(DeviceSample row) {
  impl_->add(&Batch::device_samples, std::move(row));
}
void Writer::add(ExternalCorrelation row) {
  impl_->add(&Batch::external_correlations, std::move(row));
}

void RowSink::shift_times(int64_t, int64_t) {
  throw Error("this row sink cannot shift the times of rows already added");
}

void Writer::shift_times(int64_t capture_id, int64_t delta_ns) {
  if (delta_ns == 0) return;
  flush();
  std::lock_guard db_lock(impl_->db_mu);
  static const char* const kShifts[] = {
      "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + ?1, end = end + ?1 WHERE captureId = "
      "?2",
      "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET start = start + ?1, end = end + ?1 WHERE captureId = "
      "?2",
      "UPDATE CUPTI_ACTIVITY_KIND_MEMSET SET start = start + ?1, end = end + ?1 WHERE captureId = "
      "?2",
      "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = start + ?1, end = end + ?1 WHERE captureId = "
      "?2",
      "UPDATE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION SET start = start + ?1, end = end + ?1 "
      "WHERE captureId = ?2",
      "UPDATE NVTX_EVENTS SET start = start + ?1, end = end + ?1 WHERE captureId = ?2",
      "UPDATE cpu_ops SET start = start + ?1, end = end + ?1 WHERE captureId = ?2",
      "UPDATE iterations SET start = start + ?1, end = end + ?1 WHERE captureId = ?2",
      "UPDATE memory_events SET ts = ts + ?1 WHERE captureId = ?2",
      "UPDATE device_samples SET ts = ts + ?1 WHERE captureId = ?2",
  };
  impl_->db.exec("BEGIN");
  try {
    for (const char* sql : kShifts) {
      Statement s = impl_->db.prepare(sql);
      s.bind(1, delta_ns).bind(2, capture_id).execute();
    }
    impl_->db.exec("COMMIT");
  } catch (...) {
    sqlite3_exec(impl_->db.raw(), "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void Writer::flush() {
  impl_->flush();
}

void Writer::finish(const std::function<void()>& alongside_indexes) {
  if (impl_->closed) return;
  impl_->flush();
  impl_->stop_thread();
  std::lock_guard db_lock(impl_->db_mu);
  Database& db = impl_->db;
  db.exec("BEGIN");
  {
    Statement s = db.prepare(
        "INSERT INTO event_extent(tbl, captureId, max_duration) VALUES (?,?,?) "
        "ON CONFLICT(tbl, captureId) DO UPDATE SET max_duration = "
        "MAX(max_duration, excluded.max_duration)");
    for (const auto& [key, duration] : impl_->extents)
      s.bind(1, std::string(kExtentTableNames[key.first]))
          .bind(2, key.second)
          .bind(3, duration)
          .execute();
  }
  db.exec("COMMIT");
  // The other connection's statements only read: the commit below waits for the one in
  // progress instead of failing after the default timeout.
  std::exception_ptr alongside_error;
  std::thread alongside, writeback;
  if (alongside_indexes) {
    sqlite3_busy_timeout(db.raw(), INT32_MAX);
    alongside = std::thread([&] {
      try {
        alongside_indexes();
      } catch (...) {
        alongside_error = std::current_exception();
      }
    });
  }
  try {
    if (impl_->options.build_indexes) {
      // The post-load index builds are one external sort each: let SQLite's sorter use helper
      // threads (PRAGMA threads, https://sqlite.org/pragma.html#pragma_threads) so the build is
      // not serial on one core. (A sampled ANALYZE, PRAGMA analysis_limit, was tried: its
      // statistics change query plans, and with them the row order of unordered queries.) One
      // transaction for all the indexes: one exclusive lock.
      const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
      db.exec("PRAGMA threads = " + std::to_string(std::min(cores, 8u)));
      // The sorter keeps up to the page cache's size in memory before it spills runs to temporary
      // files and merges them: 128 MiB holds the largest index of a 10M-event import (3.6 M CPU
      // ops) in one run. Measured with the sqlite3 shell on that database's tables: 2.6 -> 2.1
      // CPU-s for all the indexes and ANALYZE (64 -> 128 MiB; 256 MiB gained nothing more).
      if (!db.in_memory()) db.exec("PRAGMA cache_size = -131072");
      db.exec("BEGIN");
      db.exec(index_sql());
      db.exec("COMMIT");
      // Every page but ANALYZE's is in the file now: start writing them to disk while ANALYZE
      // runs, so the owner's sync of a temporary output (AtomicOutput::commit) waits for less
      // (fsync 0.18 s -> 0.001 s at 1e7 events). On its own thread: the call itself blocks while
      // the device queue is full (0.13 s there).
      if (impl_->options.temporary_output && !db.in_memory())
        writeback = std::thread([path = impl_->path] { start_writeback(path); });
      db.exec("BEGIN");
      db.exec("ANALYZE");
      db.exec("COMMIT");
    }
  } catch (...) {
    sqlite3_exec(db.raw(), "ROLLBACK", nullptr, nullptr, nullptr);
    if (alongside.joinable()) alongside.join();
    if (writeback.joinable()) writeback.join();
    throw;
  }
  if (alongside.joinable()) alongside.join();
  if (writeback.joinable()) writeback.join();
  if (alongside_indexes) sqlite3_busy_timeout(db.raw(), 5000);
  if (alongside_error) std::rethrow_exception(alongside_error);
  impl_->finalize_statements();
  if (!db.in_memory()) {  // an in-memory database has no WAL and no journal file to switch
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    if (!impl_->options.keep_wal_after_finish) db.exec("PRAGMA journal_mode = DELETE");
  }
  {
    std::lock_guard lock(impl_->mu);
    impl_->closed = true;
  }
  db.close();  // the last connection closing removes -wal/-shm, so the file can be renamed
}

WriterStats Writer::stats() const {
  std::lock_guard lock(impl_->mu);
  return impl_->stats;
}

const std::string& Writer::path() const {
  return impl_->path;
}

}  // namespace fleetscope::store
