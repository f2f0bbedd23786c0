#include "fleetscope/analyzer/time_axis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace fleetscope::analyzer {

const char* time_unit_suffix(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::ns:
      return "ns";
    case TimeUnit::us:
      return "\xC2\xB5s";  // µs
    case TimeUnit::ms:
      return "ms";
    case TimeUnit::s:
      return "s";
  }
  return "ns";
}

int64_t time_unit_ns(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::ns:
      return 1;
    case TimeUnit::us:
      return 1'000;
    case TimeUnit::ms:
      return 1'000'000;
    case TimeUnit::s:
      return 1'000'000'000;
  }
  return 1;
}

double TimeAxis::to_pixel(int64_t ns) const {
  if (degenerate()) return x0;
  const int64_t t = std::clamp(ns, begin_ns, end_ns);
  return x0 + double(t - begin_ns) * (x1 - x0) / double(end_ns - begin_ns);
}

int64_t TimeAxis::to_time(double px) const {
  if (degenerate() || x1 == x0 || std::isnan(px)) return begin_ns;
  const double p = std::clamp(px, std::min(x0, x1), std::max(x0, x1));
  const double fraction = (p - x0) / (x1 - x0);
  const auto offset = static_cast<int64_t>(std::llround(fraction * double(end_ns - begin_ns)));
  return std::clamp(begin_ns + offset, begin_ns, end_ns);
}

TimeUnit TimeAxis::unit() const {
  const int64_t len = length_ns();
  if (len >= time_unit_ns(TimeUnit::s)) return TimeUnit::s;
  if (len >= time_unit_ns(TimeUnit::ms)) return TimeUnit::ms;
  if (len >= time_unit_ns(TimeUnit::us)) return TimeUnit::us;
  return TimeUnit::ns;
}

int64_t TimeAxis::tick_step(int max_count) const {
  const int64_t len = length_ns();
  if (len == 0 || max_count <= 0) return 0;
  for (int64_t magnitude = 1;; magnitude *= 10) {
    for (int64_t m : {1, 2, 5}) {
      const int64_t step = m * magnitude;
      if (len / step + 1 <= max_count) return step;
    }
    if (magnitude > std::numeric_limits<int64_t>::max() / 100) break;
  }
  // Only reachable for max_count == 1 on a range longer than the largest nice step.
  return std::numeric_limits<int64_t>::max();
}

std::string TimeAxis::label(int64_t offset_ns, int decimals) const {
  const int64_t per_unit = time_unit_ns(unit());
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", std::max(decimals, 0),
                double(offset_ns) / double(per_unit));
  std::string text = buffer;
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  if (text == "-0") text = "0";
  return text + " " + time_unit_suffix(unit());
}

std::vector<TimeTick> TimeAxis::ticks(int max_count) const {
  std::vector<TimeTick> out;
  const int64_t step = tick_step(max_count);
  if (step == 0) return out;
  // Decimals the step needs in the label unit (steps are 1, 2, 5 × 10^k, units powers of ten).
  const int64_t per_unit = time_unit_ns(unit());
  int decimals = 0;
  for (int64_t p = step; p % per_unit != 0 && decimals < 9; p *= 10) ++decimals;
  const int64_t len = length_ns();
  for (int64_t offset = 0; offset <= len; offset += step) {
    out.push_back({begin_ns + offset, to_pixel(begin_ns + offset), label(offset, decimals)});
    if (len - offset < step) break;  // the next offset would pass the end (or overflow)
  }
  return out;
}

}  // namespace fleetscope::analyzer
