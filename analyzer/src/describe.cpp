#include "fleetscope/analyzer/describe.h"

#include <algorithm>
#include <cmath>

namespace fleetscope::analyzer {

double linear_quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[above] - sorted[below]);
}

Describe describe(std::vector<double> values) {
  Describe d;
  d.count = static_cast<int64_t>(values.size());
  if (values.empty()) return d;
  double sum = 0;
  for (double v : values) sum += v;
  d.mean = sum / double(values.size());
  double squares = 0;
  for (double v : values) squares += (v - d.mean) * (v - d.mean);
  d.std = values.size() > 1 ? std::sqrt(squares / double(values.size() - 1)) : 0.0;
  std::sort(values.begin(), values.end());
  d.min = values.front();
  d.max = values.back();
  d.p25 = linear_quantile(values, 0.25);
  d.p50 = linear_quantile(values, 0.50);
  d.p75 = linear_quantile(values, 0.75);
  return d;
}

}  // namespace fleetscope::analyzer
