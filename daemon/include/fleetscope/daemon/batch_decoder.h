// The daemon's side of the agent link's record batches (RecordBatch of records.thrift): rows
// decoded by Thrift become store rows for the host database's writer. The agent encodes them from
// the same store rows (collector/agent_link/batch_builder.h); both ends are generated from the
// table descriptions (schema/tables.py). Every field of a store row the agent can know travels,
// read-side ids (name ids) never do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fleetscope/store/rows.h"
#include "fleetscope/store/writer.h"
#include "records_types.h"

namespace fleetscope::daemon {

size_t row_count(const rpc::RecordBatch& batch);  // every row of every table, gpus excluded

// Appends every row of `batch` to `sink`, each stamped with `capture_id` (never the batch's own
// field: the daemon decides which capture an agent may write to). Returns the rows written.
// The batch is consumed: its strings (kernel names, API names, NVTX text) move into the store rows
// instead of being copied, one heap allocation less per row.
size_t write_batch(rpc::RecordBatch&& batch, int64_t capture_id, store::RowSink& sink);

// The same rows decoded into `rows` (appended; handed to the writer whole, store::Writer::add_rows)
// and the batch's GPU descriptions into `gpus`. Returns the rows decoded, gpus excluded.
size_t decode_batch(rpc::RecordBatch&& batch, int64_t capture_id, store::RowVectors& rows,
                    std::vector<store::GpuInfo>& gpus);

}  // namespace fleetscope::daemon
