// Store rows <-> the agent link's record structs (schema/fleetscope.thrift, "the agent link").
// The agent turns the rows its translator produces into a RecordBatch; the daemon turns a batch
// back into rows for its store::Writer. Every field of the store row that the agent can know
// travels; read-side ids (name ids) never do.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fleetscope/store/rows.h"
#include "fleetscope/store/writer.h"
#include "fleetscope_types.h"

namespace fleetscope::agent_link {

rpc::KernelRecord to_record(const store::Kernel& row);
rpc::MemcpyRecord to_record(const store::Memcpy& row);
rpc::MemsetRecord to_record(const store::Memset& row);
rpc::RuntimeRecord to_record(const store::RuntimeCall& row);
rpc::SyncRecord to_record(const store::Sync& row);
rpc::NvtxRecord to_record(const store::NvtxEvent& row);
rpc::IterationRecord to_record(const store::Iteration& row);
rpc::MemoryRecord to_record(const store::MemoryEvent& row);
rpc::ExternalCorrelationRecord to_record(const store::ExternalCorrelation& row);
rpc::GpuRecord to_record(const store::GpuInfo& gpu);

size_t row_count(const rpc::RecordBatch& batch);  // every row of every table, gpus excluded

// Appends every row of `batch` to `sink`, each stamped with `capture_id` (never the batch's own
// field: the daemon decides which capture an agent may write to). Returns the rows written.
size_t write_batch(const rpc::RecordBatch& batch, int64_t capture_id, store::RowSink& sink);

// Collects rows into batches of at most max_rows rows; the agent's streaming sink uses it.
class BatchBuilder {
 public:
  BatchBuilder(int64_t capture_id, size_t max_rows) : capture_id_(capture_id), max_rows_(max_rows) {
    reset();
  }
  template <class Row>
  void add(const Row& row) {
    append(to_record(row));
    ++rows_;
  }
  void add_gpu(const store::GpuInfo& gpu) { batch_.gpus.push_back(to_record(gpu)); batch_.__isset.gpus = true; }
  bool full() const { return rows_ >= max_rows_; }
  bool empty() const { return rows_ == 0 && batch_.gpus.empty(); }
  size_t rows() const { return rows_; }
  // The batch so far (with the next sequence number); the builder starts a new one.
  rpc::RecordBatch take();

 private:
  void reset();
  void append(rpc::KernelRecord r) { batch_.kernels.push_back(std::move(r)); batch_.__isset.kernels = true; }
  void append(rpc::MemcpyRecord r) { batch_.memcpys.push_back(std::move(r)); batch_.__isset.memcpys = true; }
  void append(rpc::MemsetRecord r) { batch_.memsets.push_back(std::move(r)); batch_.__isset.memsets = true; }
  void append(rpc::RuntimeRecord r) { batch_.runtime.push_back(std::move(r)); batch_.__isset.runtime = true; }
  void append(rpc::SyncRecord r) { batch_.syncs.push_back(std::move(r)); batch_.__isset.syncs = true; }
  void append(rpc::NvtxRecord r) { batch_.nvtx.push_back(std::move(r)); batch_.__isset.nvtx = true; }
  void append(rpc::IterationRecord r) { batch_.iterations.push_back(std::move(r)); batch_.__isset.iterations = true; }
  void append(rpc::MemoryRecord r) { batch_.memory.push_back(std::move(r)); batch_.__isset.memory = true; }
  void append(rpc::ExternalCorrelationRecord r) {
    batch_.external_correlations.push_back(std::move(r));
    batch_.__isset.external_correlations = true;
  }

  int64_t capture_id_;
  size_t max_rows_;
  int64_t sequence_ = 0;
  size_t rows_ = 0;
  rpc::RecordBatch batch_;
};

}  // namespace fleetscope::agent_link
