// SortedUnion (sorted_union.h) gives unite() of the same intervals, whether they arrive in begin
// order (united a chunk at a time, across chunk boundaries) or not (collected, then united).
#include "fleetscope/analyzer/sorted_union.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace fleetscope::analyzer {
namespace {

std::vector<Interval> random_intervals(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Interval> out;
  int64_t t = 0;
  for (size_t i = 0; i < n; ++i) {
    t += int64_t(rng() % 50);  // touching, overlapping and gapped neighbours
    const int64_t length = int64_t(rng() % 120) - 10;  // some empty ones too
    out.push_back({t, t + length});
  }
  return out;
}

IntervalSet united_one_by_one(const std::vector<Interval>& intervals) {
  SortedUnion u;
  for (const Interval& iv : intervals) u.add(iv);
  return u.take();
}

TEST(SortedUnion, InBeginOrderEqualsUniteAcrossChunks) {
  for (size_t n :
       {size_t{0}, size_t{1}, size_t{65535}, size_t{65536}, size_t{65537}, size_t{200'000}}) {
    const std::vector<Interval> intervals = random_intervals(n, uint32_t(n));
    const IntervalSet expected = unite(intervals);
    EXPECT_EQ(united_one_by_one(intervals), expected) << n;
    EXPECT_TRUE(is_normalized(united_one_by_one(intervals)));
  }
}

TEST(SortedUnion, OutOfOrderIntervalsAreUnitedToo) {
  std::vector<Interval> intervals = random_intervals(150'000, 7);
  // In order for more than two chunks, then shuffled: the ordered part is already folded.
  std::mt19937 rng(3);
  std::shuffle(intervals.begin() + 140'000, intervals.end(), rng);
  EXPECT_EQ(united_one_by_one(intervals), unite(intervals));
  // Out of order from the start, and a long interval arriving last that covers earlier ones.
  std::vector<Interval> reversed(intervals.rbegin(), intervals.rend());
  reversed.push_back({-5, 1'000});
  EXPECT_EQ(united_one_by_one(reversed), unite(reversed));
}

TEST(SortedUnion, TakeLeavesItEmptyForReuse) {
  SortedUnion u;
  u.add({10, 20});
  u.add({5, 6});  // out of order
  EXPECT_EQ(u.take(), (IntervalSet{{5, 6}, {10, 20}}));
  u.add({1, 2});
  EXPECT_EQ(u.take(), (IntervalSet{{1, 2}}));
  EXPECT_TRUE(u.take().empty());
}

}  // namespace
}  // namespace fleetscope::analyzer
