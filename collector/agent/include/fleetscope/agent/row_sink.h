// Where translated rows go. The agent writes them through store::Writer; tests collect them in
// memory so that every field can be compared with the CUPTI record it came from.
#pragma once

#include <cstdint>
#include <vector>

#include "fleetscope/store/rows.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::agent {

// CUPTI external correlation (table external_correlation).
using ExternalCorrelation = store::ExternalCorrelation;

class RowSink {
 public:
  virtual ~RowSink() = default;
  virtual void add(store::Kernel row) = 0;
  virtual void add(store::Memcpy row) = 0;
  virtual void add(store::Memset row) = 0;
  virtual void add(store::RuntimeCall row) = 0;
  virtual void add(store::Sync row) = 0;
  virtual void add(store::NvtxEvent row) = 0;
  virtual void add(store::Iteration row) = 0;
  virtual void add(store::MemoryEvent row) = 0;
  virtual void add(ExternalCorrelation row) = 0;
};

// Keeps every row; for tests and for small captures.
struct VectorSink final : RowSink {
  std::vector<store::Kernel> kernels;
  std::vector<store::Memcpy> memcpys;
  std::vector<store::Memset> memsets;
  std::vector<store::RuntimeCall> runtime_calls;
  std::vector<store::Sync> syncs;
  std::vector<store::NvtxEvent> nvtx_events;
  std::vector<store::Iteration> iterations;
  std::vector<store::MemoryEvent> memory_events;
  std::vector<ExternalCorrelation> external_correlations;

  void add(store::Kernel row) override { kernels.push_back(std::move(row)); }
  void add(store::Memcpy row) override { memcpys.push_back(std::move(row)); }
  void add(store::Memset row) override { memsets.push_back(std::move(row)); }
  void add(store::RuntimeCall row) override { runtime_calls.push_back(std::move(row)); }
  void add(store::Sync row) override { syncs.push_back(std::move(row)); }
  void add(store::NvtxEvent row) override { nvtx_events.push_back(std::move(row)); }
  void add(store::Iteration row) override { iterations.push_back(std::move(row)); }
  void add(store::MemoryEvent row) override { memory_events.push_back(std::move(row)); }
  void add(ExternalCorrelation row) override { external_correlations.push_back(row); }
};

// Forwards every row to the store's writer queue.
class WriterSink final : public RowSink {
 public:
  explicit WriterSink(store::Writer& writer) : writer_(writer) {}
  void add(store::Kernel row) override { writer_.add(std::move(row)); }
  void add(store::Memcpy row) override { writer_.add(std::move(row)); }
  void add(store::Memset row) override { writer_.add(std::move(row)); }
  void add(store::RuntimeCall row) override { writer_.add(std::move(row)); }
  void add(store::Sync row) override { writer_.add(std::move(row)); }
  void add(store::NvtxEvent row) override { writer_.add(std::move(row)); }
  void add(store::Iteration row) override { writer_.add(std::move(row)); }
  void add(store::MemoryEvent row) override { writer_.add(std::move(row)); }
  void add(ExternalCorrelation row) override { writer_.add(row); }

 private:
  store::Writer& writer_;
};

}  // namespace fleetscope::agent
