// Where the rows of a trace window go once the agent has translated them.
//
// Implementations:
//   - SqliteRecordSink (sqlite_record_sink.h): the standalone file (`fleetscope run`, or an
//     environment window), committed incrementally so that a killed job keeps what was flushed;
//   - the daemon stream (next issue): rows sent to fleetscoped, no SQLite inside the job.
//
// Adding a sink: implement RecordSink (collector/agent/src for the injection library; the core
// library for sinks that tests use directly) and choose it where the agent builds the sink for a
// window (agent.cpp, `make_sink`). Every call comes from the agent's control thread, never from an
// application thread or a CUPTI callback, so a sink may do I/O and may block for a bounded time;
// it never sees CUPTI. Errors are reported by throwing (fleetscope::Error or std::exception): the
// agent ends the window, counts the rows as dropped and keeps the job running.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleetscope/agent/row_sink.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::agent {

// The capture row as the window opens. `capture.note` already says "partial" (see
// kPartialNote): until end() replaces it, whatever the sink has made durable is a consistent,
// partial capture.
struct WindowStart {
  store::Capture capture;
  store::Host host;
  store::Process process;
};

struct WindowEnd {
  store::Capture capture;  // end_ns, dropped_records, collector_overhead_ns, note filled in
  store::Process process;  // end_ns filled in
  std::vector<store::GpuInfo> gpus;
};

class RecordSink {
 public:
  virtual ~RecordSink() = default;
  // A window opens; returns the capture id its rows carry.
  virtual int64_t begin(const WindowStart& start) = 0;
  // Receives the rows of the open window.
  virtual RowSink& rows() = 0;
  // Everything given to rows() so far becomes durable (file) or sent (daemon). Called after each
  // batch of activity buffers, so a batch survives the process being killed right afterwards.
  virtual void commit() = 0;
  // The window ended normally: final capture row, GPU facts; the output is complete.
  virtual void end(const WindowEnd& end) = 0;
  // The process is being ended by a signal (or the window failed): make what was given durable
  // with `end.capture` (its note says why it is partial). Must be quick: no index build.
  virtual void end_partial(const WindowEnd& end) = 0;
  // Where the rows go, for messages and reports ("trace-1234.db").
  virtual std::string destination() const = 0;
};

// The note a capture carries while its window is open; end() replaces it.
inline constexpr const char* kPartialNote =
    "partial: the process ended while this window was open; rows up to the last committed batch "
    "are present";

}  // namespace fleetscope::agent
