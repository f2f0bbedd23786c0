// The seam between CUPTI and the rest of the agent. The real source (libfleetscope_agent.so) loads
// libcupti with dlopen and hands over the records CUPTI fills in; the fake source used by tests
// hands over records built in the test. Both deliver the same `CUpti_Activity*` structs, so the
// translation is exercised on the exact layouts of the CUDA headers.
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
  // Starts recording; records arrive on `on_record` (from any thread, never concurrently with
  // each other). Returns false with last_error() set when recording cannot start.
  virtual bool enable(RecordCallback on_record) = 0;
  // Delivers everything recorded so far before returning.
  virtual void flush() = 0;
  // Stops recording and detaches; no callback runs after this returns.
  virtual void disable() = 0;
  // Records lost because buffers were full (CUPTI's dropped-record count, summed).
  virtual int64_t dropped_records() const = 0;
  // Time the source spent handing records over (buffer handling and the record callbacks), ns;
  // part of the collector overhead stored with the capture.
  virtual int64_t handling_ns() const = 0;
  // Name of a runtime/driver API callback id, e.g. "cudaLaunchKernel"; "" when unknown.
  virtual std::string api_name(store::ApiClass api, uint32_t cbid) const = 0;
  virtual std::string last_error() const = 0;
};

}  // namespace fleetscope::agent
