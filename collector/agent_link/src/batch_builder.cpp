#include "fleetscope/agent_link/batch_builder.h"

namespace fleetscope::agent_link {

using wire::Writer;

EncodedBatch BatchBuilder::take() {
  EncodedBatch out;
  out.capture_id = capture_id_;
  out.sequence = sequence_++;
  out.rows = rows_;
  Writer w;
  w.i64_field(1, capture_id_);
  w.i64_field(2, out.sequence);
  for (int t = 0; t < kTables; ++t) {
    if (tables_[t].count == 0) continue;
    w.field(wire::kList, static_cast<int16_t>(t));  // the table's RecordBatch field
    w.list(wire::kStruct, tables_[t].count);
    w.raw(tables_[t].w.bytes());
    tables_[t].w.clear();
    tables_[t].count = 0;
  }
  w.stop();
  out.bytes = w.take();
  rows_ = 0;
  return out;
}

}  // namespace fleetscope::agent_link
