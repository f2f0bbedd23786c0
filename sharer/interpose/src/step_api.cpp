// The step API behind sharer/include/fleetscope/step.h: exported with C linkage, found by the
// header at run time with dlsym(RTLD_DEFAULT, ...).

#include "lane_state.h"

using fleetscope::interpose::LaneState;

extern "C" {
#pragma GCC visibility push(default)

void fleetscope_step_boundary(void) {
  if (auto* gate = LaneState::instance().gate()) gate->boundary();
}

void fleetscope_step_release(void) {
  if (auto* gate = LaneState::instance().gate()) gate->release();
}

void fleetscope_step_set_total(unsigned long long total_steps) {
  if (auto* gate = LaneState::instance().gate()) gate->set_total_steps(total_steps);
}

int fleetscope_lanes_enforcing(void) {
  LaneState& lane = LaneState::instance();
  return lane.enforcing() && !lane.broken() ? 1 : 0;
}

#pragma GCC visibility pop
}  // extern "C"
