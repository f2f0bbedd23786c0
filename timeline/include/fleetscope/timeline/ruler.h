// The timeline's absolute ruler: tick times and labels counted from the capture's start (the
// origin), whatever part of the capture is visible, as Perfetto and nsys label their rulers (not
// "+0" at every visible start). Pure (no Qt), tested in tests/unit/timeline.
//
//   step   the smallest 1, 2, 5 × 10^k ns that gives at most `max_count` ticks over the visible
//          range; ticks lie at origin + n · step inside it.
//   label  the tick's offset from the origin in the unit of the visible range's far end
//          (s ≥ 1 s, ms ≥ 1 ms, µs ≥ 1 µs, else ns) with the decimals the step needs, so
//          neighbouring labels always differ ("5.202 ms", "5.204 ms").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleetscope/timeline/time_view.h"

namespace fleetscope::timeline {

struct RulerTick {
  int64_t ns = 0;  // absolute time
  double px = 0;   // view.to_pixel(ns)
  std::string label;
};

int64_t ruler_step(int64_t length_ns, int max_count);
std::vector<RulerTick> ruler_ticks(const TimeView& view, int64_t origin, int max_count);
// `offset_ns` written for ticks `step_ns` apart on a range reaching `extent_ns` from the origin.
std::string ruler_label(int64_t offset_ns, int64_t step_ns, int64_t extent_ns);
// A duration for people: "812 ns", "3.25 µs", "14.1 ms", "2.5 s" (three significant digits).
std::string format_duration_ns(int64_t ns);

}  // namespace fleetscope::timeline
