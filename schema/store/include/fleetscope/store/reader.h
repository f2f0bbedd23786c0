// Typed read access to a trace database on its own connection (readers never share the writer's).
// Time-window queries use the index on start plus the stored per-table maximum duration, so
// "rows overlapping [a, b)" is the index range start in [a - max_duration, b) filtered on end > a.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fleetscope/store/database.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::store {

// Optional filters for event queries. Unset = no filter.
struct EventFilter {
  std::optional<int64_t> captureId;
  std::optional<int32_t> deviceId;
  std::optional<int32_t> streamId;
  TimeWindow window;
};

struct TableCount {
  std::string table;
  int64_t rows = 0;
};

// Result of an arbitrary read-only query (for `fleetscope sql`).
struct QueryResult {
  std::vector<std::string> columns;
  std::vector<std::vector<std::optional<std::string>>> rows;
};

class Reader {
 public:
  explicit Reader(const std::string& path);  // read-only; migrates nothing, refuses newer versions
  explicit Reader(Database db);

  const Database& database() const { return db_; }
  int schema_version() const { return db_.schema_version(); }

  std::vector<Capture> captures() const;
  std::optional<Capture> capture(int64_t id) const;
  std::vector<GpuInfo> gpus(std::optional<int64_t> capture_id = {}) const;
  // Every process row, or those of one capture (processes_of).
  std::vector<Process> processes(std::optional<int64_t> capture_id = {}) const;
  std::vector<Workflow> workflows() const;
  std::vector<Host> hosts() const;

  std::vector<Kernel> kernels(const EventFilter& filter = {}) const;
  std::vector<Memcpy> memcpys(const EventFilter& filter = {}) const;
  std::vector<Memset> memsets(const EventFilter& filter = {}) const;
  std::vector<RuntimeCall> runtime_calls(
      const EventFilter& filter = {}) const;  // device/stream ignored
  std::vector<Sync> syncs(const EventFilter& filter = {}) const;
  std::vector<NvtxEvent> nvtx_events(const EventFilter& filter = {}) const;
  std::vector<CpuOp> cpu_ops(const EventFilter& filter = {}) const;
  std::vector<Iteration> iterations(std::optional<int64_t> capture_id = {}) const;
  std::vector<MemoryEvent> memory_events(const EventFilter& filter = {}) const;
  std::vector<DeviceSample> device_samples(const EventFilter& filter = {}) const;
  std::vector<ExternalCorrelation> external_correlations(
      std::optional<int64_t> capture_id = {}) const;
  std::vector<Finding> findings(std::optional<int64_t> capture_id = {}) const;

  // Every row of one event table (any Row of FLEETSCOPE_EVENT_ROWS) in one capture, in the order
  // they were written: for copying a capture table by table.
  template <class Row>
  std::vector<Row> rows_of(int64_t capture_id) const;

  // Streaming variant for large captures: calls `fn` per kernel in start order.
  void for_each_kernel(const EventFilter& filter,
                       const std::function<void(const Kernel&)>& fn) const;

  // All interned strings (id → text). Cached after the first call.
  const std::unordered_map<int64_t, std::string>& strings() const;
  const std::string& string(int64_t id) const;

  // Rows per event table, optionally for one capture.
  std::vector<TableCount> counts(std::optional<int64_t> capture_id = {}) const;

  // Arbitrary SQL on a read-only connection (query_only pragma set): for `fleetscope sql`.
  QueryResult query(const std::string& sql) const;

 private:
  Database db_;
  mutable std::optional<std::unordered_map<int64_t, std::string>> strings_;
};

// The processes of one capture: its own rows, plus rows migrated from schema 2 (captureId unset)
// for pids it has no row of its own for.
std::vector<Process> processes_of(const std::vector<Process>& processes, int64_t capture_id);

// Short name of a demangled C++ name: the function name without namespace, args or templates
// (what nsys calls shortName), e.g. "void at::native::vectorized_elementwise_kernel<4, ...>(...)"
// → "vectorized_elementwise_kernel".
std::string short_kernel_name(const std::string& demangled);

}  // namespace fleetscope::store
