#include <gtest/gtest.h>

#include "fleetscope/agent/trace_window.h"

namespace fleetscope::agent {
namespace {

constexpr int64_t ms = 1'000'000;

TEST(TraceWindow, FromStartUntilExit) {
  TraceWindow w(0, 0, 0);
  EXPECT_EQ(w.start(100), WindowAction::open);
  EXPECT_EQ(w.state(), WindowState::open);
  EXPECT_FALSE(w.next_deadline().has_value());
  EXPECT_EQ(w.on_time(100 + 3600'000 * ms), WindowAction::none);
  EXPECT_EQ(w.on_exit(), WindowAction::close);
  EXPECT_EQ(w.state(), WindowState::closed);
}

TEST(TraceWindow, DelayThenDuration) {
  TraceWindow w(500 * ms, 2000 * ms, 0);
  EXPECT_EQ(w.start(0), WindowAction::none);
  EXPECT_EQ(w.next_deadline(), 500 * ms);
  EXPECT_EQ(w.on_time(499 * ms), WindowAction::none);
  EXPECT_EQ(w.on_time(501 * ms), WindowAction::open);
  EXPECT_EQ(w.next_deadline(), 2501 * ms);
  EXPECT_EQ(w.on_time(2500 * ms), WindowAction::none);
  EXPECT_EQ(w.on_time(2501 * ms), WindowAction::close);
  EXPECT_EQ(w.on_time(9000 * ms), WindowAction::none);  // never reopens
  EXPECT_EQ(w.on_exit(), WindowAction::none);
}

TEST(TraceWindow, IterationsOpenAtAStepAndCloseAfterN) {
  TraceWindow w(0, 0, 3);
  EXPECT_EQ(w.start(0), WindowAction::none);
  EXPECT_EQ(w.on_time(1000 * ms), WindowAction::none);  // time alone never opens it
  EXPECT_EQ(w.on_step_end(5), WindowAction::none);      // not open yet
  EXPECT_EQ(w.on_step_begin(10), WindowAction::open);
  EXPECT_EQ(w.on_step_end(15), WindowAction::none);  // the opening step does not count
  EXPECT_EQ(w.on_step_begin(16), WindowAction::none);
  EXPECT_EQ(w.on_step_end(20), WindowAction::none);
  EXPECT_EQ(w.on_step_begin(21), WindowAction::none);
  EXPECT_EQ(w.on_step_end(30), WindowAction::none);
  EXPECT_EQ(w.on_step_begin(31), WindowAction::none);
  EXPECT_EQ(w.on_step_end(40), WindowAction::close);
  EXPECT_EQ(w.steps_seen(), 3);
  EXPECT_EQ(w.on_step_begin(41), WindowAction::none);
}

TEST(TraceWindow, IterationsAfterDelayIgnoreEarlySteps) {
  TraceWindow w(100 * ms, 0, 1);
  w.start(0);
  EXPECT_EQ(w.on_step_begin(50 * ms), WindowAction::none);
  EXPECT_EQ(w.on_step_end(60 * ms), WindowAction::none);
  EXPECT_EQ(w.on_step_begin(150 * ms), WindowAction::open);
  EXPECT_EQ(w.on_step_end(160 * ms), WindowAction::none);
  EXPECT_EQ(w.on_step_begin(170 * ms), WindowAction::none);
  EXPECT_EQ(w.on_step_end(180 * ms), WindowAction::close);
}

TEST(TraceWindow, DurationCapsAnIterationWindow) {
  TraceWindow w(0, 10 * ms, 1000);
  w.start(0);
  EXPECT_EQ(w.on_step_begin(1 * ms), WindowAction::open);
  EXPECT_EQ(w.on_time(11 * ms), WindowAction::close);
}

TEST(TraceWindow, NextStepWindowForADurationOpensAtAStep) {
  TraceWindow w(0, 10 * ms, 0, /*at_next_step=*/true);
  EXPECT_TRUE(w.watches_steps());
  EXPECT_EQ(w.start(0), WindowAction::none);
  EXPECT_EQ(w.on_time(50 * ms), WindowAction::none);
  EXPECT_FALSE(w.next_deadline().has_value());
  EXPECT_EQ(w.on_step_begin(60 * ms), WindowAction::open);
  EXPECT_EQ(w.next_deadline(), 70 * ms);
  EXPECT_EQ(w.on_step_end(65 * ms), WindowAction::none);
  EXPECT_EQ(w.on_time(70 * ms), WindowAction::close);
}

// The control thread was descheduled while the job ran three steps: it hears of all of them in
// one batch, long after they happened. It opens the window when it acts (CUPTI records only from
// then on), so none of the batch's steps was traced from its beginning: none may count, and the
// window must neither close inside the batch (a capture of no step at all) nor count untraced steps
// (a capture one step short).
TEST(TraceWindow, LateBatchOfStepsOpensTheWindowButCountsNoneOfThem) {
  TraceWindow w(0, 0, 2);
  w.start(0);
  const int64_t acted = 1000 * ms;  // when the control thread carried out the open
  EXPECT_EQ(w.on_step_begin(10 * ms), WindowAction::open);
  w.tracing_started(acted);
  EXPECT_EQ(w.on_step_end(100 * ms), WindowAction::none);
  EXPECT_EQ(w.on_step_begin(150 * ms), WindowAction::none);
  EXPECT_EQ(w.on_step_end(250 * ms), WindowAction::none);
  EXPECT_EQ(w.on_step_begin(300 * ms), WindowAction::none);
  EXPECT_EQ(w.on_step_end(400 * ms), WindowAction::none);
  EXPECT_EQ(w.state(), WindowState::open);
  EXPECT_EQ(w.steps_seen(), 0);
  // A step under way when tracing started, heard of in the next batch, is not whole either.
  EXPECT_EQ(w.on_step_begin(990 * ms), WindowAction::none);
  EXPECT_EQ(w.on_step_end(1050 * ms), WindowAction::none);
  EXPECT_EQ(w.steps_seen(), 0);
  // The steps that began after tracing started are the window's two iterations.
  EXPECT_EQ(w.on_step_begin(1100 * ms), WindowAction::none);
  EXPECT_EQ(w.on_step_end(1200 * ms), WindowAction::none);
  EXPECT_EQ(w.on_step_begin(1250 * ms), WindowAction::none);
  EXPECT_EQ(w.on_step_end(1350 * ms), WindowAction::close);
  EXPECT_EQ(w.steps_seen(), 2);
}

// The same steps heard of on time: the window counts from the opening step's own time, so the
// next two steps are its iterations (tracing_started only ever moves the start later).
TEST(TraceWindow, PromptBatchCountsTheStepsAfterTheOpeningOne) {
  TraceWindow w(0, 0, 2);
  w.start(0);
  EXPECT_EQ(w.on_step_begin(10 * ms), WindowAction::open);
  w.tracing_started(11 * ms);
  w.tracing_started(5 * ms);  // never earlier than the opening step
  EXPECT_EQ(w.on_step_end(100 * ms), WindowAction::none);
  EXPECT_EQ(w.on_step_begin(150 * ms), WindowAction::none);
  EXPECT_EQ(w.on_step_end(250 * ms), WindowAction::none);
  EXPECT_EQ(w.on_step_begin(300 * ms), WindowAction::none);
  EXPECT_EQ(w.on_step_end(400 * ms), WindowAction::close);
}

TEST(TraceWindow, DurationRunsFromWhenTracingStarted) {
  TraceWindow w(0, 10 * ms, 0, /*at_next_step=*/true);
  w.start(0);
  EXPECT_EQ(w.on_step_begin(60 * ms), WindowAction::open);
  w.tracing_started(65 * ms);
  EXPECT_EQ(w.next_deadline(), 75 * ms);
  EXPECT_EQ(w.on_time(74 * ms), WindowAction::none);
  EXPECT_EQ(w.on_time(75 * ms), WindowAction::close);
  TraceWindow waiting(5 * ms, 0, 0);
  waiting.start(0);
  waiting.tracing_started(1 * ms);  // not open: nothing changes
  EXPECT_EQ(waiting.next_deadline(), 5 * ms);
}

TEST(TraceWindow, CancelClosesAnOpenWindowAndDropsAWaitingOne) {
  TraceWindow open(0, 0, 0);
  EXPECT_EQ(open.start(0), WindowAction::open);
  EXPECT_EQ(open.cancel(), WindowAction::close);
  EXPECT_EQ(open.state(), WindowState::closed);
  TraceWindow waiting(5 * ms, 0, 0);
  waiting.start(0);
  EXPECT_EQ(waiting.cancel(), WindowAction::none);
  EXPECT_EQ(waiting.state(), WindowState::closed);
  EXPECT_EQ(waiting.on_time(10 * ms), WindowAction::none);
}

}  // namespace
}  // namespace fleetscope::agent
