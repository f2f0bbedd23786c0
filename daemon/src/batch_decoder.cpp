#include "fleetscope/daemon/batch_decoder.h"

#include <type_traits>
#include <utility>

#include "fleetscope/daemon/record_decoder.h"

namespace fleetscope::daemon {

size_t row_count(const rpc::RecordBatch& b) {
  return records::row_count(b);
}

size_t write_batch(rpc::RecordBatch&& b, int64_t capture_id, store::RowSink& sink) {
  const size_t rows = records::row_count(b);
  records::for_each_row(std::move(b), capture_id, [&]<class Row>(Row&& row) {
    if constexpr (std::is_same_v<std::decay_t<Row>, store::GpuInfo>)
      sink.add_gpu(row);
    else
      sink.add(std::forward<Row>(row));
  });
  return rows;
}

size_t decode_batch(rpc::RecordBatch&& b, int64_t capture_id, store::RowVectors& rows,
                    std::vector<store::GpuInfo>& gpus) {
  const size_t count = records::row_count(b);
  records::for_each_row(std::move(b), capture_id, [&]<class Row>(Row&& row) {
    if constexpr (std::is_same_v<std::decay_t<Row>, store::GpuInfo>)
      gpus.push_back(std::forward<Row>(row));
    else
      rows.push(std::forward<Row>(row));
  });
  return count;
}

}  // namespace fleetscope::daemon
