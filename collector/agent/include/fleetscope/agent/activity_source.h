// The seam between CUPTI and the rest of the agent. The real source (libfleetscope_agent.so) loads
// libcupti with dlopen; CUPTI fills the agent's buffers on its own threads and the source only
// queues the full ones; the agent's control thread then calls drain(), which reads the queued
// buffers and hands their records over on that thread. The fake source used by tests hands over
// records built in the test. Both deliver the same `CUpti_Activity*` structs, so the translation is
// exercised on the exact layouts of the CUDA headers.
#pragma once

#include <cupti_activity.h>

#include <cstdint>
#include <functional>
#include <string>

#include "fleetscope/store/rows.h"

namespace fleetscope::agent {

using RecordCallback = std::function<void(const CUpti_Activity& record)>;

class ActivitySource {
 public:
  virtual ~ActivitySource() = default;
  // Starts recording; records are handed to `on_record` by drain() and flush(), on the thread
  // that calls them. Returns false with last_error() set when recording cannot start.
  virtual bool enable(RecordCallback on_record) = 0;
  // Hands over the records of every buffer completed so far.
  virtual void drain() = 0;
  // Asks for everything recorded so far (a forced flush: records still in flight come back
  // incomplete), then drains.
  virtual void flush() = 0;
  // Stops recording; nothing is handed over after this returns.
  virtual void disable() = 0;
  // Records lost (CUPTI's dropped-record count, plus records lost to a declined buffer request).
  virtual int64_t dropped_records() const = 0;
  // Why records were lost, one short phrase per cause ("buffer pool full (128 MiB cap)"); empty
  // when none were.
  virtual std::string drop_reasons() const { return {}; }
  // Time the source spent handing records over (buffer handling and the record callbacks), ns;
  // part of the collector overhead stored with the capture.
  virtual int64_t handling_ns() const = 0;
  // Name of a runtime/driver API callback id, e.g. "cudaLaunchKernel"; "" when unknown.
  virtual std::string api_name(store::ApiClass api, uint32_t cbid) const = 0;
  virtual std::string last_error() const = 0;
};

}  // namespace fleetscope::agent
