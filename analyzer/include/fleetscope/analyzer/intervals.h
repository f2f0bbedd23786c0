// Interval algebra on half-open nanosecond intervals [begin, end). An IntervalSet is sorted by
// begin, disjoint and free of empty intervals; every function returning one keeps that invariant,
// so unions, intersections and gaps compose without re-sorting.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace fleetscope::analyzer {

struct Interval {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t length() const { return end > begin ? end - begin : 0; }
  bool empty() const { return end <= begin; }
  friend bool operator==(const Interval&, const Interval&) = default;
};

using IntervalSet = std::vector<Interval>;

// Union of arbitrary intervals. Touching intervals ([a,b) and [b,c)) merge into one, as HTA's
// merge_kernel_intervals does; empty intervals contribute nothing.
IntervalSet unite(std::vector<Interval> intervals);
// Same, for intervals already sorted by begin (skips the sort; the caller guarantees the order).
IntervalSet unite_sorted(std::span<const Interval> sorted_by_begin);
// Union of two sets.
IntervalSet unite(const IntervalSet& a, const IntervalSet& b);
// Points in both sets.
IntervalSet intersect(const IntervalSet& a, const IntervalSet& b);
// Points of `a` not in `b`.
IntervalSet subtract(const IntervalSet& a, const IntervalSet& b);
// The parts of `window` that `set` does not cover: the idle gaps inside the window.
IntervalSet gaps(const IntervalSet& set, Interval window);
// The parts of `set` inside `window`.
IntervalSet clip(const IntervalSet& set, Interval window);

// Sum of lengths.
int64_t total_length(const IntervalSet& set);
// Covered length inside `window`, in O(log n + k) via binary search.
int64_t covered_length(const IntervalSet& set, Interval window);
// Whether a sequence is a valid IntervalSet (sorted, disjoint, non-touching, non-empty).
bool is_normalized(const IntervalSet& set);

}  // namespace fleetscope::analyzer
