// Maps a time range in ns onto a pixel range and back, and picks "nice" axis ticks: the one place
// the report's charts convert between time and pixels, kept pure so it can be tested alone.
//
//   to_pixel(ns)  x0 + (ns − begin) · (x1 − x0) / (end − begin). A time outside [begin, end] is
//                 clamped to the nearer end first, so the result always lies in [x0, x1]. A
//                 degenerate axis (end ≤ begin: an empty or zero-length time range) maps every
//                 time to x0.
//   to_time(px)   the inverse, rounded to the nearest ns. A pixel outside [x0, x1] is clamped to
//                 the nearer end first, so the result always lies in [begin, end]. A degenerate
//                 axis (end ≤ begin, or x1 == x0) maps every pixel to begin.
//   ticks(n)      ticks at begin + k · step, k = 0, 1, ... while ≤ end, where step is the smallest
//                 of 1, 2, 5 × 10^k ns giving at most n ticks (so at least n / 2.5 of them when the
//                 range is long enough, and always the tick at begin). Labels are the offset from
//                 begin in the unit chosen for the whole range: s when the range is ≥ 1 s, else ms
//                 when ≥ 1 ms, else µs when ≥ 1 µs, else ns; with as many decimals as the step
//                 needs and no trailing zeros ("0 ms", "0.5 ms", "1 ms"). No ticks for a
//                 degenerate time range or n ≤ 0.
// The pixel range is expected with x0 ≤ x1; a reversed one (x1 < x0) maps linearly as well, and
// clamping uses the smaller and larger of the two.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fleetscope::analyzer {

enum class TimeUnit { ns, us, ms, s };
// "ns", "µs" (UTF-8), "ms", "s".
const char* time_unit_suffix(TimeUnit unit);
// Nanoseconds per unit: 1, 1e3, 1e6, 1e9.
int64_t time_unit_ns(TimeUnit unit);

struct TimeTick {
  int64_t ns = 0;     // absolute time
  double px = 0;      // to_pixel(ns)
  std::string label;  // offset from the range start, e.g. "1.5 ms"
};

struct TimeAxis {
  int64_t begin_ns = 0, end_ns = 0;  // [begin, end)
  double x0 = 0, x1 = 0;

  bool degenerate() const { return end_ns <= begin_ns; }
  int64_t length_ns() const { return degenerate() ? 0 : end_ns - begin_ns; }

  double to_pixel(int64_t ns) const;
  int64_t to_time(double px) const;

  // The unit of the labels: chosen from the range length (see above).
  TimeUnit unit() const;
  // The tick step for at most `max_count` ticks (0 for a degenerate range or max_count ≤ 0).
  int64_t tick_step(int max_count) const;
  std::vector<TimeTick> ticks(int max_count) const;
  // `offset_ns` written in unit() with `decimals` digits after the point, trailing zeros removed.
  std::string label(int64_t offset_ns, int decimals) const;
};

}  // namespace fleetscope::analyzer
