#pragma once
// Which NVTX range names mark an iteration boundary for the gate. Same convention and variable as
// the agent (FLEETSCOPE_STEP_NAMES, default "ProfilerStep#,step"): an entry ending in '#' matches
// that prefix followed by a decimal number (PyTorch's "ProfilerStep#12"), any other entry matches
// the whole name. Matching runs on every NVTX push of the job, so it is a few compares, no
// allocation.

#include <string>
#include <string_view>
#include <vector>

namespace fleetscope::lanes {

class StepRangeNames {
 public:
  StepRangeNames() : StepRangeNames(std::string_view("ProfilerStep#,step")) {}
  // Comma-separated entries; empty text means the defaults.
  explicit StepRangeNames(std::string_view text);

  bool matches(const char* name) const;
  const std::vector<std::string>& entries() const { return entries_; }

 private:
  std::vector<std::string> entries_;
};

}  // namespace fleetscope::lanes
