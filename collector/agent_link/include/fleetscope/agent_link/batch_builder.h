// The agent's record batches (RecordBatch of records.thrift), encoded straight from store rows
// into the binary protocol as they arrive: one buffer per table, so a batch is never held twice
// (rows, then a copy in Thrift structs). The per-table encoders and the field ids are generated
// from schema/tables.py (fleetscope/agent_link/record_encoder.h), as is the IDL the daemon decodes
// with Thrift's generated code (daemon/batch_decoder.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "fleetscope/agent_link/record_encoder.h"
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

  // A row of any event table.
  template <class Row>
  void add(const Row& row) {
    ++rows_;
    Encoded& table = tables_[records::batch_field<Row>()];
    ++table.count;
    records::encode(table.w, row);
  }
  // GPU facts travel with the rows but are not rows.
  void add_gpu(const store::GpuInfo& gpu) {
    Encoded& table = tables_[records::batch_field<store::GpuInfo>()];
    ++table.count;
    records::encode(table.w, gpu);
  }

  bool full() const { return rows_ >= max_rows_; }
  bool empty() const {
    return rows_ == 0 && tables_[records::batch_field<store::GpuInfo>()].count == 0;
  }
  size_t rows() const { return rows_; }
  // The batch so far, with the next sequence number (0, 1, ...); the builder starts a new one.
  EncodedBatch take();

 private:
  // Indexed by the table's RecordBatch field id (3 ...; 0-2 unused).
  static constexpr int kTables = records::kBatchFields;
  struct Encoded {
    wire::Writer w;
    int32_t count = 0;
  };
  int64_t capture_id_;
  size_t max_rows_;
  int64_t sequence_ = 0;
  size_t rows_ = 0;
  Encoded tables_[kTables];
};

}  // namespace fleetscope::agent_link
