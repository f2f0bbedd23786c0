#include "fleetscope/timeline/ruler.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace fleetscope::timeline {

namespace {

struct Unit {
  int64_t ns;
  const char* suffix;
};

Unit unit_for(int64_t extent_ns) {
  const int64_t e = std::llabs(extent_ns);
  if (e >= 1'000'000'000) return {1'000'000'000, "s"};
  if (e >= 1'000'000) return {1'000'000, "ms"};
  if (e >= 1'000) return {1'000, "µs"};
  return {1, "ns"};
}

}  // namespace

int64_t ruler_step(int64_t length_ns, int max_count) {
  if (length_ns <= 0 || max_count <= 0) return 0;
  for (int64_t decade = 1;; decade *= 10)
    for (int64_t m : {1, 2, 5}) {
      const int64_t step = m * decade;
      if (length_ns / step + 1 <= max_count || decade > INT64_MAX / 100) return step;
    }
}

std::string ruler_label(int64_t offset_ns, int64_t step_ns, int64_t extent_ns) {
  const Unit unit = unit_for(extent_ns);
  int decimals = 0;
  if (step_ns > 0 && step_ns < unit.ns)
    decimals = int(std::ceil(std::log10(double(unit.ns) / double(step_ns)) - 1e-9));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, double(offset_ns) / double(unit.ns),
                unit.suffix);
  return buf;
}

std::vector<RulerTick> ruler_ticks(const TimeView& view, int64_t origin, int max_count) {
  std::vector<RulerTick> out;
  const TimeRange vis = view.visible();
  const int64_t step = ruler_step(vis.length(), max_count);
  if (step <= 0) return out;
  // The first multiple of the step (from the origin) at or after the visible start.
  const int64_t from = vis.begin - origin;
  int64_t n = from / step;
  if (n * step < from) ++n;
  for (int64_t offset = n * step; origin + offset <= vis.end; offset += step)
    out.push_back({origin + offset, view.to_pixel(origin + offset),
                   ruler_label(offset, step, vis.end - origin)});
  return out;
}

std::string format_duration_ns(int64_t ns) {
  const Unit unit = unit_for(ns);
  if (unit.ns == 1) return std::to_string(ns) + " ns";
  const double v = double(ns) / double(unit.ns);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f %s", v >= 100 ? 0 : v >= 10 ? 1 : 2, v, unit.suffix);
  return buf;
}

}  // namespace fleetscope::timeline
