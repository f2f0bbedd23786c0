// The agent's control channel: who asks it to open and close trace windows.
//
// The agent is resident in every CUDA process (CUDA_INJECTION64_PATH) and idle until a control
// source asks for a window. Sources shipped with the agent:
//   - EnvironmentControl (environment_control.h): the standalone window that `fleetscope run` and
//     FLEETSCOPE_OUTPUT describe, requested once when the agent starts;
//   - LineControl (line_control.h): text commands ("open duration-ms=2000", "close") read from a
//     FIFO named by FLEETSCOPE_CONTROL_FIFO, one reply line each;
// and the daemon link (fleetscoped, next issue) is meant to be one more.
//
// Adding a source: implement ControlSource in collector/agent/src (the agent library must stay
// self-contained: no new shared-library dependency), and add it where Agent::start() builds its
// list of sources (agent.cpp, `make_sources`). All calls into a source happen on one thread at a
// time: start() on the thread that runs InitializeInjection, everything else on the agent's
// control thread. A source must never block: it hands the agent a file descriptor to poll
// (poll_fd) and/or a wake-up time (next_wakeup_ns), and does its reading in on_readable /
// on_timer. It asks for windows through the WindowController it is given; the answers are
// immediate (WindowReply), and the end of each window is reported through window_ended().
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace fleetscope::agent {

// One request for a trace window. A window opens immediately, after `delay_ms`, or at the next
// step boundary (an NVTX range named as a step, see step_names.h), and closes after `duration_ms`,
// after `iterations` step ranges, on a close request, or when the process exits; 0 = no limit of
// that kind.
struct WindowRequest {
  int64_t delay_ms = 0;
  int64_t duration_ms = 0;
  int64_t iterations = 0;
  bool start_at_next_step = false;  // implied by iterations > 0
  std::string requester;            // for messages: "environment", "fifo", "daemon"
};

// The answer to a request. `reason` is one line, meant to be relayed to whoever asked (the daemon
// passes it to `fleetscope trace`); refusal.h has the texts.
struct WindowReply {
  bool accepted = false;
  std::string reason;
};

// What a window produced, reported when it ends (also when it ends early: signal, error).
struct WindowReport {
  int64_t capture_id = 0;
  std::string destination;  // file path, or the daemon's name for it
  bool complete = false;    // false: ended by a signal or an error; the note says why
  int64_t start_ns = 0, end_ns = 0;
  int64_t rows = 0;
  int64_t dropped_records = 0;
  std::string note;
};

enum class WindowPhase { idle, waiting, open };

// Implemented by the agent; sources call it from start(), on_readable() and on_timer().
class WindowController {
 public:
  virtual ~WindowController() = default;
  virtual WindowReply open_window(const WindowRequest& request) = 0;
  virtual WindowReply close_window() = 0;
  virtual WindowPhase phase() const = 0;
};

class ControlSource {
 public:
  virtual ~ControlSource() = default;
  // Called once when the agent starts (on the thread running InitializeInjection, before the
  // control thread exists). A window requested here opens before CUDA returns to the program.
  virtual void start(WindowController& controller) = 0;
  // A descriptor for the control thread to poll (-1: none) and what to do when it is readable.
  virtual int poll_fd() const { return -1; }
  virtual void on_readable(WindowController& /*controller*/) {}
  // When on_timer() should run next (CLOCK_MONOTONIC ns); none: never.
  virtual std::optional<int64_t> next_wakeup_ns() const { return std::nullopt; }
  virtual void on_timer(WindowController& /*controller*/) {}
  // A window this source (or any other) opened has ended.
  virtual void window_ended(const WindowReport& /*report*/) {}
  virtual const char* name() const = 0;
};

}  // namespace fleetscope::agent
