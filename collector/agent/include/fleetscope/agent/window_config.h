// When the agent traces, read from the environment of the traced process. The agent is idle (no
// CUPTI loaded, nothing enabled) unless an output destination is set: `fleetscope run` sets these,
// a fleet daemon would set them per job.
//
//   FLEETSCOPE_OUTPUT=path.db     standalone output ("%p" is replaced by the pid)
//   FLEETSCOPE_PART_DIR=dir       write dir/part-<pid>.db instead (the launcher merges the parts)
//   FLEETSCOPE_TRACE=0            force idle even with an output set (to measure the idle agent)
//   FLEETSCOPE_DELAY_MS=N         open the window N ms after attach (default 0 = from start)
//   FLEETSCOPE_DURATION_MS=N      close it N ms after it opened (default 0 = at exit)
//   FLEETSCOPE_ITERATIONS=N       open at the first step range, close after N step ranges
//   FLEETSCOPE_STEP_NAMES=a#,b    NVTX range names that mark steps (default "ProfilerStep#,step")
//   FLEETSCOPE_BUFFER_SIZE_KB=N   size of each CUPTI activity buffer (default 8192)
//   FLEETSCOPE_CUPTI_PATH=path    libcupti to load (default: beside the agent, the toolkit's, then
//                                 the loader's search)
//   NVTX_INJECTION64_PATH=libcupti  (NVTX's own variable) needed for NVTX ranges and iteration
//                                 windows; `fleetscope run` sets it
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fleetscope/agent/step_names.h"

namespace fleetscope::agent {

using EnvLookup = std::function<const char*(const char* name)>;

struct WindowConfig {
  bool active = false;  // a window will open at some point
  int64_t delay_ms = 0;
  int64_t duration_ms = 0;
  int64_t iterations = 0;
  StepNames step_names;
  int64_t buffer_size_kb = 8192;
  std::string output;  // as given (may contain %p)
  std::string part_dir;
  std::string cupti_path;
  std::vector<std::string> problems;  // malformed values that fell back to defaults

  static WindowConfig from_env(const EnvLookup& getenv);
  // Where this process writes its database.
  std::string output_path(int64_t pid) const;
};

}  // namespace fleetscope::agent
