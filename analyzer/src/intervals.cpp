#include "fleetscope/analyzer/intervals.h"

#include <algorithm>

namespace fleetscope::analyzer {

IntervalSet unite_sorted(std::span<const Interval> sorted_by_begin) {
  IntervalSet out;
  for (const Interval& iv : sorted_by_begin) {
    if (iv.empty()) continue;
    if (!out.empty() && iv.begin <= out.back().end) {
      out.back().end = std::max(out.back().end, iv.end);
    } else {
      out.push_back(iv);
    }
  }
  return out;
}

IntervalSet unite(std::vector<Interval> intervals) {
  // Most callers collect intervals from start-sorted event arrays: a linear check spares them the
  // sort.
  const auto by_begin = [](const Interval& x, const Interval& y) { return x.begin < y.begin; };
  if (!std::is_sorted(intervals.begin(), intervals.end(), by_begin))
    std::sort(intervals.begin(), intervals.end(), by_begin);
  return unite_sorted(intervals);
}

IntervalSet unite(const IntervalSet& a, const IntervalSet& b) {
  std::vector<Interval> merged;
  merged.reserve(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(merged),
             [](const Interval& x, const Interval& y) { return x.begin < y.begin; });
  return unite_sorted(merged);
}

IntervalSet intersect(const IntervalSet& a, const IntervalSet& b) {
  IntervalSet out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    int64_t lo = std::max(a[i].begin, b[j].begin);
    int64_t hi = std::min(a[i].end, b[j].end);
    if (lo < hi) out.push_back({lo, hi});
    if (a[i].end < b[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

IntervalSet subtract(const IntervalSet& a, const IntervalSet& b) {
  IntervalSet out;
  size_t j = 0;
  for (Interval piece : a) {
    while (j < b.size() && b[j].end <= piece.begin) ++j;
    size_t k = j;
    while (k < b.size() && b[k].begin < piece.end) {
      if (b[k].begin > piece.begin) out.push_back({piece.begin, b[k].begin});
      piece.begin = std::max(piece.begin, b[k].end);
      if (piece.empty()) break;
      ++k;
    }
    if (!piece.empty()) out.push_back(piece);
  }
  return out;
}

IntervalSet clip(const IntervalSet& set, Interval window) {
  IntervalSet out;
  if (window.empty()) return out;
  auto it = std::lower_bound(set.begin(), set.end(), window.begin,
                             [](const Interval& iv, int64_t t) { return iv.end <= t; });
  for (; it != set.end() && it->begin < window.end; ++it) {
    Interval piece{std::max(it->begin, window.begin), std::min(it->end, window.end)};
    if (!piece.empty()) out.push_back(piece);
  }
  return out;
}

IntervalSet gaps(const IntervalSet& set, Interval window) {
  if (window.empty()) return {};
  return subtract(IntervalSet{window}, clip(set, window));
}

int64_t total_length(const IntervalSet& set) {
  int64_t sum = 0;
  for (const Interval& iv : set) sum += iv.length();
  return sum;
}

int64_t covered_length(const IntervalSet& set, Interval window) {
  if (window.empty()) return 0;
  int64_t sum = 0;
  auto it = std::lower_bound(set.begin(), set.end(), window.begin,
                             [](const Interval& iv, int64_t t) { return iv.end <= t; });
  for (; it != set.end() && it->begin < window.end; ++it)
    sum += std::min(it->end, window.end) - std::max(it->begin, window.begin);
  return sum;
}

bool is_normalized(const IntervalSet& set) {
  for (size_t i = 0; i < set.size(); ++i) {
    if (set[i].empty()) return false;
    if (i > 0 && set[i].begin <= set[i - 1].end) return false;
  }
  return true;
}

}  // namespace fleetscope::analyzer
