#include "fleetscope/store/writer.h"

#include <sqlite3.h>

#include <exception>
#include <map>
#include <optional>
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
  size_t rows = 0;
};

namespace {

const char* kInsertKernel =
    "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, contextId, streamId, "
    "correlationId, globalPid, demangledName, shortName, mangledName, gridX, gridY, gridZ, blockX, "
    "blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory, "
    "localMemoryPerThread, graphId, graphNodeId, launchType, blocksPerSm, warpsPerSm, estOccupancy, "
    "captureId) VALUES (?,?,?,?,?,?,?,?,?,NULL,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
const char* kInsertMemcpy =
    "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId, contextId, streamId, "
    "correlationId, globalPid, bytes, copyKind, srcKind, dstKind, srcDeviceId, dstDeviceId, "
    "graphNodeId, captureId) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
const char* kInsertMemset =
    "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET(start, end, deviceId, contextId, streamId, "
    "correlationId, globalPid, value, bytes, memKind, graphNodeId, captureId) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)";
const char* kInsertRuntime =
    "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME(start, end, eventClass, globalTid, correlationId, "
    "nameId, returnValue, cbid, captureId) VALUES (?,?,?,?,?,?,?,?,?)";
const char* kInsertSync =
    "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION(start, end, deviceId, contextId, streamId, "
    "correlationId, globalPid, globalTid, syncType, eventId, captureId) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?)";
const char* kInsertNvtx =
    "INSERT INTO NVTX_EVENTS(start, end, eventType, rangeId, text, textId, domainId, globalTid, "
    "captureId) VALUES (?,?,?,?,?,?,?,?,?)";
const char* kInsertCpuOp =
    "INSERT INTO cpu_ops(start, end, globalTid, nameId, category, externalId, captureId) "
    "VALUES (?,?,?,?,?,?,?)";
const char* kInsertIteration =
    "INSERT OR REPLACE INTO iterations(captureId, globalPid, step, start, end, source) "
    "VALUES (?,?,?,?,?,?)";
const char* kInsertMemoryEvent =
    "INSERT INTO memory_events(ts, captureId, globalPid, deviceId, address, bytes, "
    "total_allocated, total_reserved) VALUES (?,?,?,?,?,?,?,?)";
const char* kInsertDeviceSample =
    "INSERT INTO device_samples(ts, host_id, deviceId, metric_id, value, captureId) "
    "VALUES (?,?,?,?,?,?)";

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
  std::unordered_map<std::string, KernelNames> kernel_names;
  std::map<std::pair<std::string, int64_t>, int64_t> extents;  // (table, capture) -> max duration
  std::optional<Statement> insert_string, kernel, memcpy, memset, runtime, sync, nvtx, cpu_op,
      iteration, memory_event, device_sample;

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
    if (!insert_string) insert_string.emplace(db.raw(), "INSERT INTO StringIds(id, value) VALUES (?, ?)");
    int64_t id = next_string_id++;
    insert_string->bind(1, id).bind(2, text).execute();
    string_ids.emplace(text, id);
    return id;
  }

  void note_extent(const char* table, int64_t capture, int64_t duration) {
    int64_t& slot = extents[{table, capture}];
    if (duration > slot) slot = duration;
  }

  Statement& stmt(std::optional<Statement>& slot, const char* sql) {
    if (!slot) slot.emplace(db.raw(), sql);
    return *slot;
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

  void write_rows(Batch& b) {
    if (!b.kernels.empty()) {
      Statement& s = stmt(kernel, kInsertKernel);
      const Kernel* last_row = nullptr;
      KernelNames names{};
      for (const Kernel& k : b.kernels) {
        // Consecutive kernels very often share a name: skip the hash lookup then.
        if (!last_row || last_row->demangledName != k.demangledName ||
            last_row->shortName != k.shortName) {
          auto it = kernel_names.find(k.demangledName);
          if (it == kernel_names.end() || !k.shortName.empty()) {
            names.demangled = intern_locked(k.demangledName);
            names.short_name = intern_locked(k.shortName.empty() ? short_kernel_name(k.demangledName)
                                                                 : k.shortName);
            if (k.shortName.empty()) kernel_names.emplace(k.demangledName, names);
          } else {
            names = it->second;
          }
          last_row = &k;
        }
        s.bind(1, k.start).bind(2, k.end).bind(3, int64_t{k.deviceId}).bind(4, k.contextId);
        s.bind(5, int64_t{k.streamId}).bind(6, k.correlationId).bind(7, k.globalPid);
        s.bind(8, names.demangled).bind(9, names.short_name);
        s.bind(10, int64_t{k.gridX}).bind(11, int64_t{k.gridY}).bind(12, int64_t{k.gridZ});
        s.bind(13, int64_t{k.blockX}).bind(14, int64_t{k.blockY}).bind(15, int64_t{k.blockZ});
        s.bind(16, k.registersPerThread).bind(17, k.staticSharedMemory);
        s.bind(18, k.dynamicSharedMemory).bind(19, k.localMemoryPerThread).bind(20, k.graphId);
        s.bind(21, k.graphNodeId).bind(22, k.launchType).bind(23, k.blocksPerSm);
        s.bind(24, k.warpsPerSm).bind(25, k.estOccupancy).bind(26, k.captureId);
        s.execute();
        note_extent("CUPTI_ACTIVITY_KIND_KERNEL", k.captureId, k.end - k.start);
      }
    }
    for (const Memcpy& m : b.memcpys) {
      Statement& s = stmt(memcpy, kInsertMemcpy);
      s.bind(1, m.start).bind(2, m.end).bind(3, int64_t{m.deviceId}).bind(4, m.contextId);
      s.bind(5, int64_t{m.streamId}).bind(6, m.correlationId).bind(7, m.globalPid);
      s.bind(8, m.bytes).bind(9, int64_t{m.copyKind}).bind(10, m.srcKind).bind(11, m.dstKind);
      s.bind(12, m.srcDeviceId).bind(13, m.dstDeviceId).bind(14, m.graphNodeId);
      s.bind(15, m.captureId).execute();
      note_extent("CUPTI_ACTIVITY_KIND_MEMCPY", m.captureId, m.end - m.start);
    }
    for (const Memset& m : b.memsets) {
      Statement& s = stmt(memset, kInsertMemset);
      s.bind(1, m.start).bind(2, m.end).bind(3, int64_t{m.deviceId}).bind(4, m.contextId);
      s.bind(5, int64_t{m.streamId}).bind(6, m.correlationId).bind(7, m.globalPid);
      s.bind(8, m.value).bind(9, m.bytes).bind(10, m.memKind).bind(11, m.graphNodeId);
      s.bind(12, m.captureId).execute();
      note_extent("CUPTI_ACTIVITY_KIND_MEMSET", m.captureId, m.end - m.start);
    }
    for (const RuntimeCall& r : b.runtime_calls) {
      Statement& s = stmt(runtime, kInsertRuntime);
      int64_t name = intern_locked(r.name);
      s.bind(1, r.start).bind(2, r.end).bind(3, int64_t{static_cast<int32_t>(r.eventClass)});
      s.bind(4, r.globalTid).bind(5, r.correlationId).bind(6, name).bind(7, r.returnValue);
      s.bind(8, r.cbid).bind(9, r.captureId).execute();
      note_extent("CUPTI_ACTIVITY_KIND_RUNTIME", r.captureId, r.end - r.start);
    }
    for (const Sync& y : b.syncs) {
      Statement& s = stmt(sync, kInsertSync);
      s.bind(1, y.start).bind(2, y.end).bind(3, y.deviceId).bind(4, y.contextId);
      s.bind(5, y.streamId).bind(6, y.correlationId).bind(7, y.globalPid).bind(8, y.globalTid);
      s.bind(9, int64_t{y.syncType}).bind(10, y.eventId).bind(11, y.captureId).execute();
      note_extent("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", y.captureId, y.end - y.start);
    }
    for (const NvtxEvent& n : b.nvtx) {
      Statement& s = stmt(nvtx, kInsertNvtx);
      s.bind(1, n.start).bind(2, n.end).bind(3, int64_t{n.eventType}).bind(4, n.rangeId);
      s.bind(5, n.text).bind(6, intern_locked(n.text)).bind(7, n.domainId).bind(8, n.globalTid);
      s.bind(9, n.captureId).execute();
      note_extent("NVTX_EVENTS", n.captureId, n.end ? *n.end - n.start : 0);
    }
    for (const CpuOp& c : b.cpu_ops) {
      Statement& s = stmt(cpu_op, kInsertCpuOp);
      s.bind(1, c.start).bind(2, c.end).bind(3, c.globalTid).bind(4, intern_locked(c.name));
      s.bind(5, c.category).bind(6, c.externalId).bind(7, c.captureId).execute();
      note_extent("cpu_ops", c.captureId, c.end - c.start);
    }
    for (const Iteration& it : b.iterations) {
      Statement& s = stmt(iteration, kInsertIteration);
      s.bind(1, it.captureId).bind(2, it.globalPid).bind(3, it.step).bind(4, it.start);
      s.bind(5, it.end).bind(6, it.source).execute();
    }
    for (const MemoryEvent& m : b.memory_events) {
      Statement& s = stmt(memory_event, kInsertMemoryEvent);
      s.bind(1, m.ts).bind(2, m.captureId).bind(3, m.globalPid).bind(4, int64_t{m.deviceId});
      s.bind(5, m.address).bind(6, m.bytes).bind(7, m.total_allocated).bind(8, m.total_reserved);
      s.execute();
    }
    for (const DeviceSample& d : b.device_samples) {
      Statement& s = stmt(device_sample, kInsertDeviceSample);
      s.bind(1, d.ts).bind(2, d.host_id).bind(3, int64_t{d.deviceId});
      s.bind(4, intern_locked(d.metric)).bind(5, d.value).bind(6, d.captureId).execute();
    }
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
      lock.lock();
      if (failure && !error) error = failure;
      if (!failure) {
        stats.rows_written += static_cast<int64_t>(batch->rows);
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
    current = std::make_unique<Batch>();
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
    kernel.reset();
    memcpy.reset();
    memset.reset();
    runtime.reset();
    sync.reset();
    nvtx.reset();
    cpu_op.reset();
    iteration.reset();
    memory_event.reset();
    device_sample.reset();
  }
};

Writer::Writer(Database db, WriterOptions options)
    : impl_(std::make_unique<Impl>(std::move(db), options)) {
  impl_->path = impl_->db.path();
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
      "INSERT OR REPLACE INTO processes(globalPid, pid, host_id, workflow_id, rank, world_size, "
      "command, start_ns, end_ns) VALUES (?,?,?,?,?,?,?,?,?)");
  s.bind(1, p.globalPid).bind(2, p.pid).bind(3, p.host_id).bind(4, p.workflow_id);
  s.bind(5, p.rank).bind(6, p.world_size).bind(7, p.command).bind(8, p.start_ns);
  s.bind(9, p.end_ns).execute();
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

void Writer::add(Kernel row) { impl_->add(&Batch::kernels, std::move(row)); }
void Writer::add(Memcpy row) { impl_->add(&Batch::memcpys, std::move(row)); }
void Writer::add(Memset row) { impl_->add(&Batch::memsets, std::move(row)); }
void Writer::add(RuntimeCall row) { impl_->add(&Batch::runtime_calls, std::move(row)); }
void Writer::add(Sync row) { impl_->add(&Batch::syncs, std::move(row)); }
void Writer::add(NvtxEvent row) { impl_->add(&Batch::nvtx, std::move(row)); }
void Writer::add(CpuOp row) { impl_->add(&Batch::cpu_ops, std::move(row)); }
void Writer::add(Iteration row) { impl_->add(&Batch::iterations, std::move(row)); }
void Writer::add(MemoryEvent row) { impl_->add(&Batch::memory_events, std::move(row)); }
void Writer::add(DeviceSample row) { impl_->add(&Batch::device_samples, std::move(row)); }

void Writer::flush() { impl_->flush(); }

void Writer::finish() {
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
      s.bind(1, key.first).bind(2, key.second).bind(3, duration).execute();
  }
  db.exec("COMMIT");
  db.exec(index_sql());
  db.exec("ANALYZE");
  impl_->finalize_statements();
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  if (!impl_->options.keep_wal_after_finish) db.exec("PRAGMA journal_mode = DELETE");
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

const std::string& Writer::path() const { return impl_->path; }

}  // namespace fleetscope::store
