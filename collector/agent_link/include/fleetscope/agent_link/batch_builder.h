// The agent's record batches (schema/fleetscope.thrift, struct RecordBatch), encoded straight from
// store rows into the binary protocol as they arrive: one buffer per table, so a batch is never
// held twice (rows, then a copy in Thrift structs). Field ids and types follow the IDL; the
// daemon decodes with Thrift's generated code (daemon/batch_decoder.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "fleetscope/agent_link/wire.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::agent_link {

// One RecordBatch struct, encoded (its fields and the stop byte).
struct EncodedBatch {
  int64_t capture_id = 0;
  int64_t sequence = 0;
  size_t rows = 0;  // every row of every table, gpus excluded
  std::string bytes;
};

class BatchBuilder {
 public:
  BatchBuilder(int64_t capture_id, size_t max_rows)
      : capture_id_(capture_id), max_rows_(max_rows) {}

  void add(const store::Kernel& row);
  void add(const store::Memcpy& row);
  void add(const store::Memset& row);
  void add(const store::RuntimeCall& row);
  void add(const store::Sync& row);
  void add(const store::NvtxEvent& row);
  void add(const store::Iteration& row);
  void add(const store::MemoryEvent& row);
  void add(const store::ExternalCorrelation& row);
  void add_gpu(const store::GpuInfo& gpu);

  bool full() const { return rows_ >= max_rows_; }
  bool empty() const { return rows_ == 0 && tables_[kGpus].count == 0; }
  size_t rows() const { return rows_; }
  // The batch so far, with the next sequence number (0, 1, ...); the builder starts a new one.
  EncodedBatch take();

 private:
  enum Table {
    kKernels,
    kMemcpys,
    kMemsets,
    kRuntime,
    kSyncs,
    kNvtx,
    kIterations,
    kMemory,
    kExternal,
    kGpus,
    kTables
  };
  struct Encoded {
    wire::Writer w;
    int32_t count = 0;
  };
  wire::Writer& next(Table table, bool is_row);

  int64_t capture_id_;
  size_t max_rows_;
  int64_t sequence_ = 0;
  size_t rows_ = 0;
  Encoded tables_[kTables];
};

}  // namespace fleetscope::agent_link
