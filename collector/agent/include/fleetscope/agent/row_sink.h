// Where translated rows go: the store's one row-sink interface for event rows (store/row_sink.h).
// The agent writes them through store::Writer (WriterSink) or streams them to the daemon; tests
// collect them in memory (VectorSink) so that every field can be compared with the CUPTI record it
// came from.
#pragma once

#include <utility>

#include "fleetscope/store/row_sink.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::agent {

using RowSink = store::EventSink;
using VectorSink = store::VectorSink;
using ExternalCorrelation = store::ExternalCorrelation;

// Forwards every row to the store's writer queue.
class WriterSink final : public store::UniformEventSink<WriterSink> {
 public:
  explicit WriterSink(store::Writer& writer) : writer_(writer) {}
  template <class Row>
  void put(Row&& row) {
    writer_.add(std::forward<Row>(row));
  }

 private:
  store::Writer& writer_;
};

}  // namespace fleetscope::agent
