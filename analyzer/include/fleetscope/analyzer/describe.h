// pandas' Series.describe() on a sample: the summary HTA prints for its distributions
// (queue length, memory bandwidth, idle intervals). count, mean, sample standard deviation
// (ddof = 1; 0 for one value, where pandas gives NaN), min, the 25/50/75 % quantiles with
// linear interpolation (pandas' default), max. All 0 for an empty sample.
#pragma once

#include <cstdint>
#include <vector>

namespace fleetscope::analyzer {

struct Describe {
  int64_t count = 0;
  double mean = 0, std = 0, min = 0, p25 = 0, p50 = 0, p75 = 0, max = 0;
};

Describe describe(std::vector<double> values);

// pandas Series.quantile(q) (linear interpolation) over an ascending-sorted sample; 0 if empty.
double linear_quantile(const std::vector<double>& sorted, double q);

}  // namespace fleetscope::analyzer
