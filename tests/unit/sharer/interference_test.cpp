#include "fleetscope/sharer/interference.h"

#include <gtest/gtest.h>

namespace fleetscope::sharer {
namespace {

TEST(InterferenceModel, AloneThereIsNoSlowdown) {
  EXPECT_DOUBLE_EQ(InterferenceModel{0.1}.parallel_slowdown(0.7, 0.7), 1.0);
}

TEST(InterferenceModel, UndersubscribedGpuOnlyPaysContention) {
  // u = 0.3 next to 0.4: max(1, 0.7) * (1 + 0.1 * 0.4) = 1.04
  EXPECT_NEAR(InterferenceModel{0.1}.parallel_slowdown(0.3, 0.7), 1.04, 1e-12);
}

TEST(InterferenceModel, OversubscribedGpuStretchesEveryone) {
  // Two compute-bound jobs: 2 * (1 + 0.1 * 1) = 2.2
  EXPECT_NEAR(InterferenceModel{0.1}.parallel_slowdown(1.0, 2.0), 2.2, 1e-12);
}

TEST(InterferenceModel, CalibrationRecoversAlphaFromMeasuredRuns) {
  const double alpha = 0.25;
  std::vector<ColocationObservation> runs;
  for (double own : {0.2, 0.5}) {
    for (double others : {0.1, 0.4, 0.9}) {
      const InterferenceModel truth{alpha};
      runs.push_back({own, others, truth.iteration_slowdown(own, own + others)});
    }
  }
  EXPECT_NEAR(calibrate_interference(runs).alpha, alpha, 1e-9);
  EXPECT_DOUBLE_EQ(calibrate_interference({}, InterferenceModel{0.3}).alpha, 0.3);
}

TEST(TimeSharing, GpuPhasesSerialiseHostPhasesOverlap) {
  // Two jobs of 1 s iterations at 30% GPU: at worst each waits for the other's 0.3 s GPU phase
  // once per iteration (bound 1.3); the fluid estimate (0.6 s of GPU work per 1 s round) is 1.0;
  // the estimate is their mean.
  EXPECT_DOUBLE_EQ(time_sharing_slowdown({{0.3, 1.0}, {0.3, 1.0}}, 0), 1.3);
  EXPECT_DOUBLE_EQ(time_sharing_estimate({{0.3, 1.0}, {0.3, 1.0}}, 0), 1.15);
  // Compute-bound: round robin doubles the iteration time (bound and estimate agree).
  EXPECT_DOUBLE_EQ(time_sharing_slowdown({{1.0, 1.0}, {1.0, 1.0}}, 1), 2.0);
  EXPECT_DOUBLE_EQ(time_sharing_estimate({{1.0, 1.0}, {1.0, 1.0}}, 1), 2.0);
  // A 0.5 s job next to a 2 s compute-bound one waits for the long iteration.
  EXPECT_DOUBLE_EQ(time_sharing_slowdown({{1.0, 0.5}, {1.0, 2.0}}, 0), 5.0);
}

}  // namespace
}  // namespace fleetscope::sharer
