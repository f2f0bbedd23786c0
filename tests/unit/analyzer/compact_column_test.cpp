// CompactColumn (compact_column.h): one shared value until a row differs, then an array; 64-bit
// integers in 32 bits while every value fits. Every state reads back exactly what was written,
// through each way the loader and finalize() change a column (push_back, resize, set, permute).
#include "fleetscope/analyzer/compact_column.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace fleetscope::analyzer {
namespace {

template <class T>
std::vector<T> values(const CompactColumn<T>& column) {
  return std::vector<T>(column.begin(), column.end());
}

TEST(CompactColumn, OneValueCostsNoArray) {
  CompactColumn<int64_t> column;
  column.reserve(1000);
  for (int i = 0; i < 1000; ++i) column.push_back(-1);
  EXPECT_EQ(column.size(), 1000u);
  EXPECT_FALSE(column.materialized());
  EXPECT_EQ(column[999], -1);
  column.resize(1500, -1);
  EXPECT_FALSE(column.materialized());
  column.set(3, -1);
  EXPECT_FALSE(column.materialized());
  EXPECT_EQ(values(column), std::vector<int64_t>(1500, -1));
}

TEST(CompactColumn, SixtyFourBitIntegersStayNarrowWhileTheyFit) {
  CompactColumn<int64_t> column;
  std::vector<int64_t> expected;
  for (int64_t v : {int64_t{7}, int64_t{7}, int64_t{-1}, int64_t{INT32_MAX}, int64_t{INT32_MIN}}) {
    column.push_back(v);
    expected.push_back(v);
  }
  EXPECT_TRUE(column.narrowed());
  EXPECT_EQ(values(column), expected);
  // One value beyond 32 bits turns the column into 64-bit values, none lost.
  const int64_t big = int64_t{INT32_MAX} + 1;
  column.push_back(big);
  expected.push_back(big);
  EXPECT_TRUE(column.materialized());
  EXPECT_FALSE(column.narrowed());
  EXPECT_EQ(values(column), expected);
}

TEST(CompactColumn, UniformValueBeyondThirtyTwoBitsGoesStraightToWide) {
  CompactColumn<int64_t> column;
  const int64_t epoch_ns = int64_t{1'700'000'000} * 1'000'000'000;
  column.push_back(epoch_ns);
  column.push_back(epoch_ns);
  column.push_back(1);
  EXPECT_FALSE(column.narrowed());
  EXPECT_EQ(values(column), (std::vector<int64_t>{epoch_ns, epoch_ns, 1}));
}

TEST(CompactColumn, SetResizeAndPermuteInEveryState) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  CompactColumn<int64_t> column;
  column.resize(4, 5);  // uniform
  column.set(1, 6);     // narrow
  EXPECT_TRUE(column.narrowed());
  column.resize(6, 9);
  EXPECT_EQ(values(column), (std::vector<int64_t>{5, 6, 5, 5, 9, 9}));
  column.permute({5, 4, 3, 2, 1, 0});
  EXPECT_EQ(values(column), (std::vector<int64_t>{9, 9, 5, 5, 6, 5}));
  column.set(2, big);  // wide
  EXPECT_FALSE(column.narrowed());
  EXPECT_EQ(values(column), (std::vector<int64_t>{9, 9, big, 5, 6, 5}));
  column.resize(7, -3);
  column.permute({6, 0, 1, 2, 3, 4, 5});
  EXPECT_EQ(values(column), (std::vector<int64_t>{-3, 9, 9, big, 5, 6, 5}));
  column.resize(2);
  EXPECT_EQ(values(column), (std::vector<int64_t>{-3, 9}));
  // A narrow column grown by a value beyond 32 bits widens too.
  CompactColumn<int64_t> grown;
  grown.push_back(1), grown.push_back(2);
  grown.resize(3, big);
  EXPECT_EQ(values(grown), (std::vector<int64_t>{1, 2, big}));
  grown.clear();
  EXPECT_TRUE(grown.empty());
  EXPECT_FALSE(grown.materialized());
}

TEST(CompactColumn, OtherTypesAreArraysOfTheirOwn) {
  CompactColumn<double> occupancy;
  occupancy.push_back(std::nan(""));
  occupancy.push_back(std::nan(""));
  EXPECT_FALSE(occupancy.materialized());  // NaN equals itself byte for byte
  occupancy.push_back(0.5);
  EXPECT_TRUE(occupancy.materialized());
  EXPECT_FALSE(occupancy.narrowed());
  EXPECT_TRUE(std::isnan(occupancy[0]));
  EXPECT_EQ(occupancy[2], 0.5);
  CompactColumn<int32_t> device;
  device.push_back(0), device.push_back(1);
  EXPECT_FALSE(device.narrowed());
  EXPECT_EQ(values(device), (std::vector<int32_t>{0, 1}));
}

TEST(CompactColumn, EqualityComparesValuesWhateverTheState) {
  CompactColumn<int64_t> narrow, wide;
  narrow.push_back(1), narrow.push_back(2);
  wide.push_back(int64_t{1} << 40), wide.set(0, 1), wide.push_back(2);
  EXPECT_TRUE(narrow.narrowed());
  EXPECT_FALSE(wide.narrowed());
  EXPECT_EQ(narrow, wide);
  wide.push_back(3);
  EXPECT_FALSE(narrow == wide);
}

}  // namespace
}  // namespace fleetscope::analyzer
