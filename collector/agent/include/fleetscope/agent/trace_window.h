// The trace window's state machine, free of clocks and threads so it can be tested: the agent feeds
// it the time and the step boundaries it observes and carries out the actions it returns.
#pragma once

#include <cstdint>
#include <optional>

namespace fleetscope::agent {

enum class WindowAction { none, open, close };
enum class WindowState { waiting, open, closed };

class TraceWindow {
 public:
  // A window opens after `delay_ns`, at the first step that begins after it when
  // `at_next_step` (implied by iterations > 0), and closes after `duration_ns` or `iterations`
  // steps (0 = no limit of that kind).
  TraceWindow(int64_t delay_ns, int64_t duration_ns, int64_t iterations, bool at_next_step = false)
      : delay_ns_(delay_ns),
        duration_ns_(duration_ns),
        iterations_(iterations),
        at_next_step_(at_next_step || iterations > 0) {}

  // Attach time; a window without delay and without iterations opens right here.
  WindowAction start(int64_t now_ns);
  // Time passing: opens after the delay (time windows) or closes after the duration.
  WindowAction on_time(int64_t now_ns);
  // NVTX step ranges (only step windows react), with the time the application thread saw them.
  // The agent hears of them late and in batches; a step counts towards `iterations` only when it
  // began after tracing started (see tracing_started), so the step that opens the window and any
  // step already under way when the agent acted on it are never counted: the window closes at the
  // end of the N-th step traced from its beginning.
  WindowAction on_step_begin(int64_t step_ns);
  WindowAction on_step_end(int64_t step_ns);
  // After carrying out `open`: the time from which the source records (taken after enabling it).
  // The window counts as open from then, not from the (earlier) event that opened it, so events
  // of the same batch that happened before it count for nothing and a duration runs from it.
  void tracing_started(int64_t now_ns);
  // The process is exiting: an open window closes.
  WindowAction on_exit();

  // Whether step boundaries matter to this window (the agent watches NVTX only then).
  bool watches_steps() const { return at_next_step_; }
  // A close request: an open window closes, a waiting one is cancelled.
  WindowAction cancel();

  // When on_time() next needs to be called; none when only steps or exit can change the state.
  std::optional<int64_t> next_deadline() const;
  WindowState state() const { return state_; }
  int64_t steps_seen() const { return steps_done_; }

 private:
  WindowAction open(int64_t now_ns);
  WindowAction close();

  int64_t delay_ns_, duration_ns_, iterations_;
  bool at_next_step_;
  int64_t start_ns_ = 0, open_ns_ = 0, step_begin_ns_ = -1;
  int64_t steps_done_ = 0;
  bool started_ = false;
  WindowState state_ = WindowState::waiting;
};

}  // namespace fleetscope::agent
