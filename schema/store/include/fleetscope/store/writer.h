// The single writer of a trace database. Producers append rows; rows are grouped in batches and
// handed to one background thread that inserts them with prepared statements inside one
// transaction per batch. Interning of strings happens on that thread. Indexes are created by
// finish(), after the bulk load (faster than maintaining them row by row).
//
// Thread safety: the add_* calls may come from several threads (each takes a short lock to append
// to the current batch). Synchronous calls (add_capture, update_capture, ...) flush pending rows
// first so ids and ordering stay consistent.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fleetscope/store/database.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::store {

struct WriterOptions {
  size_t batch_rows = 65536;      // rows per transaction
  size_t max_queued_batches = 8;  // producers block beyond this (bounded memory)
  int page_size = 8192;           // set before WAL is enabled (SQLite ignores it afterwards)
  std::string writer_name = "fleetscope";
  // WAL suits a database that is written while others read it (the daemon's host database). A
  // finished one-shot file (import, standalone run) is switched back to a rollback journal by
  // finish(), so it is one self-contained file and read-only readers leave no -wal/-shm beside it.
  bool keep_wal_after_finish = false;
  // For a file written under store::AtomicOutput: no journal and no syncs while writing (a crash
  // or an error leaves only a temporary file that is never renamed into place);
  // AtomicOutput::commit() syncs the finished file once before the rename. Live databases keep
  // WAL + synchronous=NORMAL.
  bool temporary_output = false;
  // false: finish() builds no post-load indexes and runs no ANALYZE. For a transient database
  // that is read once, in full, right after the load (Database::create_in_memory()); every query
  // still works, without index support.
  bool build_indexes = true;
};

struct WriterStats {
  int64_t rows_written = 0;
  int64_t batches = 0;
};

// Where importers put rows: the calls a trace importer makes on the store. store::Writer writes
// them to a database; other sinks (the analyzer's CaptureSink) keep them in memory. The semantics
// are Writer's: add_capture / add_host / add_workflow return the new row's id (1, 2, ... in a new
// store), upsert_process replaces by globalPid, add_gpu by (captureId, id), update_capture by id.
class RowSink {
 public:
  virtual ~RowSink() = default;

  virtual int64_t add_capture(const Capture& capture) = 0;
  virtual void update_capture(const Capture& capture) = 0;  // by capture.id
  virtual int64_t add_host(const Host& host) = 0;
  virtual int64_t add_workflow(const Workflow& workflow) = 0;
  virtual void upsert_process(const Process& process) = 0;
  virtual void add_gpu(const GpuInfo& gpu) = 0;

  virtual void add(Kernel row) = 0;
  virtual void add(Memcpy row) = 0;
  virtual void add(Memset row) = 0;
  virtual void add(RuntimeCall row) = 0;
  virtual void add(Sync row) = 0;
  virtual void add(NvtxEvent row) = 0;
  virtual void add(CpuOp row) = 0;
  virtual void add(Iteration row) = 0;
  virtual void add(MemoryEvent row) = 0;
  virtual void add(DeviceSample row) = 0;
  virtual void add(ExternalCorrelation row) = 0;

  // Adds `delta_ns` to every time of the capture's event rows added so far (kernels, copies,
  // memsets, API calls, syncs, NVTX, CPU ops, iterations, memory events, device samples). The
  // Kineto importer needs it when baseTimeNanoseconds, written after the events, differs from the
  // base it assumed while streaming them. Sinks that never see such input need not support it.
  virtual void shift_times(int64_t capture_id, int64_t delta_ns);

 protected:
  RowSink() = default;
  RowSink(const RowSink&) = default;
  RowSink& operator=(const RowSink&) = default;
};

class Writer : public RowSink {
 public:
  // Takes ownership of a read-write database (see Database::create / open).
  explicit Writer(Database db, WriterOptions options = {});
  ~Writer() override;  // finish() if not done; never throws
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Synchronous: returns the new id.
  int64_t add_capture(const Capture& capture) override;
  void update_capture(const Capture& capture) override;  // by capture.id
  int64_t add_host(const Host& host) override;
  int64_t add_workflow(const Workflow& workflow) override;
  void upsert_process(const Process& process) override;
  void add_gpu(const GpuInfo& gpu) override;
  int64_t add_finding(const Finding& finding);
  void delete_findings(int64_t capture_id);
  int64_t intern(const std::string& text);

  // Queued.
  void add(Kernel row) override;
  void add(Memcpy row) override;
  void add(Memset row) override;
  void add(RuntimeCall row) override;
  void add(Sync row) override;
  void add(NvtxEvent row) override;
  void add(CpuOp row) override;
  void add(Iteration row) override;
  void add(MemoryEvent row) override;
  void add(DeviceSample row) override;
  void add(ExternalCorrelation row) override;
  void shift_times(int64_t capture_id, int64_t delta_ns) override;

  void flush();  // waits until every queued row is in the database
  // flush, record event extents, create indexes, ANALYZE, checkpoint (see WriterOptions), close.
  // `alongside_indexes`, when given, runs on its own thread while the indexes are built, once
  // every row is committed: work that reads the rows through another connection (the index
  // build's single commit waits for that connection's statement in progress, however long).
  void finish(const std::function<void()>& alongside_indexes = {});
  WriterStats stats() const;
  const std::string& path() const;

 private:
  struct Batch;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fleetscope::store
