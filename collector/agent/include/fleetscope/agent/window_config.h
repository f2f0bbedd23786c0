// The agent's settings, read from the environment of the traced process, and the environment
// window (one of the agent's control sources, environment_control.h). The agent is resident and
// idle: it maps libcupti at CUDA init (docs/agent.md, "On a GPU") but subscribes and enables
// nothing until a window opens. The environment asks for a window when an output destination is
// set; `fleetscope run` sets these, a fleet can set them per job.
//
//   FLEETSCOPE_OUTPUT=path.db     standalone output; "%p" is replaced by the pid, and a name
//                                 without "%p" gets "-<pid>" before its extension, so that the
//                                 processes of a job never write over each other
//   FLEETSCOPE_PART_DIR=dir       write dir/part-<pid>.db instead (the launcher merges the parts)
//   FLEETSCOPE_TRACE=0            no environment window even with an output set (idle agent)
//   FLEETSCOPE_DELAY_MS=N         open the window N ms after attach (default 0 = from start)
//   FLEETSCOPE_DURATION_MS=N      close it N ms after it opened (default 0 = at exit)
//   FLEETSCOPE_ITERATIONS=N       open at the next step range, close after N step ranges
//   FLEETSCOPE_STEP_NAMES=a#,b    NVTX range names that mark steps (default "ProfilerStep#,step")
//   FLEETSCOPE_BUFFER_SIZE_KB=N   size of each CUPTI activity buffer (default 4096, Kineto's)
//   FLEETSCOPE_BUFFER_POOL_MB=N   cap on all activity buffers together (default 128, Kineto's);
//                                 past it records are dropped and counted
//   FLEETSCOPE_RUNTIME_FILTER=a,b runtime calls not stored (default: runtime_filter.h; "none")
//   FLEETSCOPE_CONTROL_FIFO=path  also take "open ..."/"close" commands from this FIFO
//                                 (control_command.h); replies are appended to
//   FLEETSCOPE_CONTROL_REPLY=path (optional), one line per command
//   FLEETSCOPE_SIGNAL_FLUSH_MS=N  how long a SIGTERM/SIGINT/SIGABRT waits for the agent to commit
//                                 before the signal goes on to the job's handler (default 2000)
//   FLEETSCOPE_CUPTI_PATH=path    libcupti to load (default: the one the process already loaded,
//                                 beside the agent, the toolkit's, then the loader's search)
//   NVTX_INJECTION64_PATH=libcupti  (NVTX's own variable) needed for NVTX ranges and step
//                                 windows. When unset, the agent sets it at CUDA init to the
//                                 libcupti it will trace with, so that NVTX calls made after
//                                 CUDA init reach the same CUPTI as the agent's subscriber (with
//                                 two copies in a process, e.g. PyTorch's and the carried one,
//                                 step ranges sent to the other copy are never seen); when it
//                                 names a libcupti and FLEETSCOPE_CUPTI_PATH is unset, the agent
//                                 traces with that copy
//   FLEETSCOPE_DETACH=always|never  whether CUPTI is finalized after each window (default
//                                 always, so no overhead lingers); never keeps one subscriber
//                                 with every domain and activity kind off between windows
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fleetscope/agent/control_source.h"
#include "fleetscope/agent/step_names.h"

namespace fleetscope::agent {

using EnvLookup = std::function<const char*(const char* name)>;

struct WindowConfig {
  bool active = false;  // the environment asks for a window
  int64_t delay_ms = 0;
  int64_t duration_ms = 0;
  int64_t iterations = 0;
  StepNames step_names;
  int64_t buffer_size_kb = 4096;
  int64_t buffer_pool_mb = 128;
  std::string runtime_filter = "default";
  std::string output;  // as given (may contain %p)
  std::string part_dir;
  std::string cupti_path;
  std::string control_fifo, control_reply;
  int64_t signal_flush_ms = 2000;
  enum class Detach { always, never };
  Detach detach = Detach::always;
  std::vector<std::string> problems;  // malformed values that fell back to defaults

  static WindowConfig from_env(const EnvLookup& getenv);
  // Where this process writes its database.
  std::string output_path(int64_t pid) const;
  // The environment window as a request.
  WindowRequest request() const;
};

}  // namespace fleetscope::agent
