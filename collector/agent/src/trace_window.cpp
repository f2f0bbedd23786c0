#include "fleetscope/agent/trace_window.h"

namespace fleetscope::agent {

WindowAction TraceWindow::open(int64_t now_ns) {
  state_ = WindowState::open;
  open_ns_ = now_ns;
  return WindowAction::open;
}

WindowAction TraceWindow::close() {
  state_ = WindowState::closed;
  return WindowAction::close;
}

WindowAction TraceWindow::start(int64_t now_ns) {
  if (started_) return WindowAction::none;
  started_ = true;
  start_ns_ = now_ns;
  if (!at_next_step_ && delay_ns_ == 0) return open(now_ns);
  return WindowAction::none;
}

WindowAction TraceWindow::on_time(int64_t now_ns) {
  if (!started_) return WindowAction::none;
  if (state_ == WindowState::waiting && !at_next_step_ && now_ns >= start_ns_ + delay_ns_)
    return open(now_ns);
  if (state_ == WindowState::open && duration_ns_ > 0 && now_ns >= open_ns_ + duration_ns_)
    return close();
  return WindowAction::none;
}

WindowAction TraceWindow::on_step_begin(int64_t step_ns) {
  if (!started_ || !at_next_step_) return WindowAction::none;
  step_begin_ns_ = step_ns;
  if (state_ == WindowState::waiting && step_ns >= start_ns_ + delay_ns_) return open(step_ns);
  return WindowAction::none;
}

WindowAction TraceWindow::on_step_end(int64_t step_ns) {
  if (iterations_ == 0 || state_ != WindowState::open) return WindowAction::none;
  // Only steps that began after tracing started count. The step whose beginning opens the window
  // is traced from a little after its start (the control thread enables CUPTI once it hears of
  // it), and when the control thread ran late, the steps queued behind it in the same batch
  // happened before CUPTI was enabled: none of them is a whole iteration in the trace.
  if (step_ns <= open_ns_ || step_begin_ns_ <= open_ns_) return WindowAction::none;
  if (++steps_done_ >= iterations_) return close();
  return WindowAction::none;
}

void TraceWindow::tracing_started(int64_t now_ns) {
  if (state_ == WindowState::open && now_ns > open_ns_) open_ns_ = now_ns;
}

WindowAction TraceWindow::cancel() {
  if (state_ == WindowState::open) return close();
  state_ = WindowState::closed;
  return WindowAction::none;
}

WindowAction TraceWindow::on_exit() {
  if (state_ == WindowState::open) return close();
  state_ = WindowState::closed;
  return WindowAction::none;
}

std::optional<int64_t> TraceWindow::next_deadline() const {
  if (!started_) return std::nullopt;
  if (state_ == WindowState::waiting && !at_next_step_) return start_ns_ + delay_ns_;
  if (state_ == WindowState::open && duration_ns_ > 0) return open_ns_ + duration_ns_;
  return std::nullopt;
}

}  // namespace fleetscope::agent
