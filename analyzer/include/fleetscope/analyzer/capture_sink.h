// Importer rows straight into a CaptureData, without a trace database: the direct path under
// `fleetscope analyze TRACE.json.gz`.
//
// CaptureSink is a store::RowSink: an importer writes into it exactly as into a store::Writer, and
// take(capture_id) returns the CaptureData that load_capture(reader, capture_id) reads back from a
// database (Database::create_in_memory(), default WriterOptions) that a Writer built from the same
// calls: the same rows in the same order, the same filtering, and the same name ids (the sink
// interns strings in the order the Writer's batches do, so even CaptureData::names is equal).
// Row order: the tables the loader reads without ORDER BY (kernels, memcpys, memsets, runtime,
// syncs, cpu_ops) come back in insertion order from that index-less database; the sink keeps
// insertion order too.
//
// Limitations: the rows of one sink must belong to one capture (what an import produces); take()
// throws std::logic_error when the loaded tables hold rows of several captures. Unlike Writer, a
// CaptureSink is not thread-safe (the importers call it from one thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "fleetscope/analyzer/capture_data.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::analyzer {

class CaptureSink : public store::RowSink {
 public:
  // `batch_rows`: the Writer's batch size (WriterOptions::batch_rows) whose string-id order to
  // reproduce.
  explicit CaptureSink(size_t batch_rows = store::WriterOptions{}.batch_rows);
  ~CaptureSink() override;
  CaptureSink(const CaptureSink&) = delete;
  CaptureSink& operator=(const CaptureSink&) = delete;

  int64_t add_capture(const store::Capture& capture) override;
  void update_capture(const store::Capture& capture) override;
  int64_t add_host(const store::Host& host) override;
  int64_t add_workflow(const store::Workflow& workflow) override;
  void upsert_process(const store::Process& process) override;
  void add_gpu(const store::GpuInfo& gpu) override;

  void add(store::Kernel row) override;
  void add(store::Memcpy row) override;
  void add(store::Memset row) override;
  void add(store::RuntimeCall row) override;
  void add(store::Sync row) override;
  void add(store::NvtxEvent row) override;
  void add(store::CpuOp row) override;
  void add(store::Iteration row) override;
  void add(store::MemoryEvent row) override;
  void add(store::DeviceSample row) override;
  void add(store::ExternalCorrelation row) override;
  void shift_times(int64_t capture_id, int64_t delta_ns) override;

  // The capture's data, finalized (what load_capture returns). Throws InputError when there is
  // no such capture. Call once: the sink is empty afterwards.
  CaptureData take(int64_t capture_id, const LoadProgress& progress = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Imports one trace file (any format importers::import_file accepts) into a CaptureSink and
// returns the capture's data: equal to load_capture on importers::import_to_memory(path), without
// the database. Throws InputError on bad input (the same errors as import_to_memory), and in a
// build without the importer library.
// `import_progress(bytes_done, bytes_total, events)` is called while the file is read.
using ImportProgressFn =
    std::function<void(int64_t bytes_done, int64_t bytes_total, int64_t events)>;
CaptureData load_trace_file(const std::string& path, const LoadProgress& progress = {},
                            const ImportProgressFn& import_progress = {});

}  // namespace fleetscope::analyzer
