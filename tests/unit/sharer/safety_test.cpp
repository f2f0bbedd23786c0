#include "fleetscope/sharer/safety.h"

#include <gtest/gtest.h>

namespace fleetscope::sharer {
namespace {

SafetyMargin exact() {
  SafetyMargin margin;
  margin.z = 0;
  margin.granularity_bytes = 1;
  return margin;
}

TEST(SafetyCondition, SumOfPersistentPlusLargestEphemeral) {
  const std::vector<MemoryDemand> jobs{{100, 50, 0}, {200, 80, 0}, {50, 10, 0}};
  EXPECT_TRUE(satisfies_safety(jobs, 350 + 80, exact()));
  EXPECT_FALSE(satisfies_safety(jobs, 350 + 80 - 1, exact()));
}

TEST(SafetyCondition, MarginCoversTheOneLiveEphemeralPeak) {
  // Only one job of a lane is inside an iteration, so the margin is that of the live job:
  // max_k (T_k + z sigma_k), not z * sqrt(sum of every job's variance).
  SafetyMargin margin = exact();
  margin.z = 3;
  // T + 3 sigma: 50 + 9 = 59 and 20 + 12 = 32, so 59 is the live worst case (summing the
  // variances would have asked for 50 + 15 = 65).
  const std::vector<MemoryDemand> jobs{{100, 50, 3.0}, {100, 20, 4.0}};
  EXPECT_TRUE(satisfies_safety(jobs, 200 + 59, margin));
  EXPECT_FALSE(satisfies_safety(jobs, 200 + 58, margin));
  // A job with a small T but a large variation dominates: 20 + 3 * 20 = 80 > 50 + 9.
  const std::vector<MemoryDemand> noisy{{100, 50, 3.0}, {100, 20, 20.0}};
  EXPECT_TRUE(satisfies_safety(noisy, 200 + 80, margin));
  EXPECT_FALSE(satisfies_safety(noisy, 200 + 79, margin));
  // Adding more jobs with the same sigma does not grow the margin.
  const std::vector<MemoryDemand> many{{10, 50, 3.0}, {10, 50, 3.0}, {10, 50, 3.0}, {10, 50, 3.0}};
  EXPECT_TRUE(satisfies_safety(many, 40 + 59, margin));
}

TEST(SafetyCondition, UnmeasuredJobsUseTheRelativePrior) {
  SafetyMargin margin = exact();
  margin.z = 1;
  margin.default_relative_stddev = 0.1;
  EXPECT_DOUBLE_EQ(margin.variance_of({80, 20, -1}), 100.0);  // sigma = 0.1 * (80 + 20)
}

TEST(SafetyCondition, FastPathMatchesRecomputation) {
  SafetyMargin margin;
  LaneLoad load;
  std::vector<MemoryDemand> jobs;
  for (int i = 1; i <= 5; ++i) {
    MemoryDemand demand{i * 100 * kMiB, (7 - i) * 64 * kMiB, -1};
    const int64_t need = required_bytes_with(load, demand, margin);
    jobs.push_back(demand);
    EXPECT_TRUE(satisfies_safety(jobs, need, margin));
    EXPECT_FALSE(satisfies_safety(jobs, need - margin.granularity_bytes, margin));
    load.add(demand, margin);
    EXPECT_EQ(required_bytes(load, margin), need);
  }
}

}  // namespace
}  // namespace fleetscope::sharer
