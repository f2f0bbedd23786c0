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
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fleetscope/store/database.h"
#include "fleetscope/store/row_sink.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::store {

struct WriterOptions {
  size_t batch_rows = 65536;      // rows per transaction
  size_t max_queued_batches = 8;  // producers block beyond this (bounded memory)
  int page_size = 8192;           // set before WAL is enabled (SQLite ignores it afterwards)
  std::string writer_name = "fleetscope";  // also the name of the writer's thread (15 characters)
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
  // Asked on the writer's thread between two insert statements of a queued batch's transaction
  // (every few hundred rows): true commits the rows inserted so far and goes on in a new
  // transaction. For a connection that other writers wait for (the daemon's host database, whose
  // short writers then wait for a fraction of a batch instead of a whole one: write_turns.h). A
  // batch then commits in parts; its ticket (add_rows) still counts as committed only once every
  // part is, and a part that fails stops the writer as before, the earlier parts staying in.
  std::function<bool()> commit_early;
};

struct WriterStats {
  int64_t rows_written = 0;
  int64_t batches = 0;
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
  // A row of the meta table (key/value facts about the file); nullopt deletes it.
  void set_meta(const std::string& key, const std::optional<std::string>& value);
  int64_t intern(const std::string& text);

  // Queued.
#define FLEETSCOPE_WRITER_ADD(Row, plural) void add(Row row) override;
  FLEETSCOPE_EVENT_ROWS(FLEETSCOPE_WRITER_ADD)
#undef FLEETSCOPE_WRITER_ADD
  void shift_times(int64_t capture_id, int64_t delta_ns) override;

  // A whole batch of rows from one producer (the daemon's agent link), queued under one lock as
  // a transaction of its own instead of row by row through add(). The rows are swapped out of
  // `rows`, which comes back empty with the capacity of an earlier batch (no fresh pages for the
  // caller's next batch). No order is kept with rows other threads add() meanwhile. Returns the
  // batch's ticket for wait_committed().
  uint64_t add_rows(RowVectors& rows, size_t row_count);
  // Returns once the batch of `ticket` is committed (the batches queued before it too), without
  // waiting for what was queued after it, as flush() does; rethrows the error of a failed batch.
  void wait_committed(uint64_t ticket);
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
