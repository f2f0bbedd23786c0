// The one row-sink interface: where every producer of rows puts them (the CUPTI translator,
// the importers, the daemon's batch decoder, the launcher's merge) and what every consumer of rows
// implements (store::Writer, the analyzer's in-memory CaptureSink, the agent's link to the daemon,
// test sinks). The event rows' add() overloads come from the table descriptions
// (FLEETSCOPE_EVENT_ROWS, schema/tables.py), so a new event table is a new overload everywhere.
#pragma once

#include <cstdint>
#include <utility>

#include "fleetscope/store/rows.h"

namespace fleetscope::store {

// Streamed rows of the event tables (kernels, copies, API calls, ...).
class EventSink {
 public:
  virtual ~EventSink() = default;
#define FLEETSCOPE_EVENT_SINK_ADD(Row, plural) virtual void add(Row row) = 0;
  FLEETSCOPE_EVENT_ROWS(FLEETSCOPE_EVENT_SINK_ADD)
#undef FLEETSCOPE_EVENT_SINK_ADD

 protected:
  EventSink() = default;
  EventSink(const EventSink&) = default;
  EventSink& operator=(const EventSink&) = default;
};

// Event rows plus the synchronous tables a capture needs (captures, hosts, workflows, processes,
// GPUs): the calls a trace importer makes on the store. The semantics are Writer's: add_capture /
// add_host / add_workflow return the new row's id (1, 2, ... in a new store), upsert_process
// replaces by (captureId, globalPid), add_gpu by (captureId, id), update_capture by id.
class RowSink : public EventSink {
 public:
  virtual int64_t add_capture(const Capture& capture) = 0;
  virtual void update_capture(const Capture& capture) = 0;  // by capture.id
  virtual int64_t add_host(const Host& host) = 0;
  virtual int64_t add_workflow(const Workflow& workflow) = 0;
  virtual void upsert_process(const Process& process) = 0;
  virtual void add_gpu(const GpuInfo& gpu) = 0;
  using EventSink::add;

  // Adds `delta_ns` to every time of the capture's event rows added so far. The Kineto importer
  // needs it when baseTimeNanoseconds, written after the events, differs from the base it assumed
  // while streaming them. Sinks that never see such input need not support it.
  virtual void shift_times(int64_t capture_id, int64_t delta_ns);
};

// An EventSink (or RowSink, as Base) that hands every event row, whatever its table, to
// Derived::put(Row&&): for sinks that treat all tables alike (counting, forwarding, encoding,
// collecting).
template <class Derived, class Base = EventSink>
class UniformEventSink : public Base {
 public:
#define FLEETSCOPE_UNIFORM_ADD(Row, plural)           \
  void add(Row row) override {                        \
    static_cast<Derived*>(this)->put(std::move(row)); \
  }
  FLEETSCOPE_EVENT_ROWS(FLEETSCOPE_UNIFORM_ADD)
#undef FLEETSCOPE_UNIFORM_ADD
};

// Keeps every row; for tests and for small captures.
struct VectorSink final : UniformEventSink<VectorSink>, RowVectors {
  template <class Row>
  void put(Row&& row) {
    push(std::forward<Row>(row));
  }
};

}  // namespace fleetscope::store
