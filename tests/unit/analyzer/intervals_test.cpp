#include "fleetscope/analyzer/intervals.h"

#include <gtest/gtest.h>

namespace fleetscope::analyzer {
namespace {

TEST(Intervals, UniteMergesOverlappingAndTouchingAndDropsEmpty) {
  IntervalSet u = unite({{130, 140}, {135, 150}, {150, 150}, {145, 170}, {200, 220}, {220, 230}});
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0], (Interval{130, 170}));
  EXPECT_EQ(u[1], (Interval{200, 230}));
  EXPECT_EQ(total_length(u), 70);
  EXPECT_TRUE(is_normalized(u));
}

TEST(Intervals, UniteOfUnsortedInputAndContainedIntervals) {
  IntervalSet u = unite({{50, 60}, {0, 100}, {10, 20}, {300, 310}});
  EXPECT_EQ(u, (IntervalSet{{0, 100}, {300, 310}}));
}

TEST(Intervals, UnionOfTwoSets) {
  IntervalSet a{{0, 10}, {20, 30}}, b{{5, 22}, {40, 50}};
  EXPECT_EQ(unite(a, b), (IntervalSet{{0, 30}, {40, 50}}));
}

TEST(Intervals, Intersect) {
  IntervalSet a{{0, 10}, {20, 30}, {40, 50}}, b{{5, 25}, {45, 100}};
  EXPECT_EQ(intersect(a, b), (IntervalSet{{5, 10}, {20, 25}, {45, 50}}));
  EXPECT_TRUE(intersect(a, {}).empty());
}

TEST(Intervals, Subtract) {
  IntervalSet a{{0, 100}, {200, 300}}, b{{10, 20}, {90, 210}, {250, 260}};
  EXPECT_EQ(subtract(a, b), (IntervalSet{{0, 10}, {20, 90}, {210, 250}, {260, 300}}));
  EXPECT_EQ(subtract(a, {}), a);
  EXPECT_TRUE(subtract(a, IntervalSet{{-5, 400}}).empty());
}

TEST(Intervals, GapsInsideWindow) {
  IntervalSet busy{{10, 20}, {30, 40}};
  EXPECT_EQ(gaps(busy, {0, 50}), (IntervalSet{{0, 10}, {20, 30}, {40, 50}}));
  EXPECT_EQ(gaps(busy, {15, 35}), (IntervalSet{{20, 30}}));
  EXPECT_EQ(gaps({}, {0, 5}), (IntervalSet{{0, 5}}));
  EXPECT_TRUE(gaps(busy, {5, 5}).empty());
}

TEST(Intervals, ClipAndCoveredLength) {
  IntervalSet busy{{10, 20}, {30, 40}, {50, 60}};
  EXPECT_EQ(clip(busy, {15, 55}), (IntervalSet{{15, 20}, {30, 40}, {50, 55}}));
  EXPECT_EQ(covered_length(busy, {15, 55}), 20);
  EXPECT_EQ(covered_length(busy, {0, 100}), 30);
  EXPECT_EQ(covered_length(busy, {41, 49}), 0);
}

TEST(Intervals, ProfilerPluginUtilizationCase) {
  // kineto tb_plugin GPU-metrics unit case: steps [100, 220] us, five kernels → 60 / 120.
  IntervalSet busy = unite({{130, 140}, {135, 150}, {150, 150}, {145, 170}, {200, 220}});
  EXPECT_EQ(covered_length(busy, {100, 220}), 60);
}

TEST(Intervals, NormalizedCheckRejectsTouchingOrUnsorted) {
  EXPECT_FALSE(is_normalized({{0, 10}, {10, 20}}));
  EXPECT_FALSE(is_normalized({{20, 30}, {0, 10}}));
  EXPECT_FALSE(is_normalized({{5, 5}}));
  EXPECT_TRUE(is_normalized({{0, 10}, {11, 20}}));
}

}  // namespace
}  // namespace fleetscope::analyzer
