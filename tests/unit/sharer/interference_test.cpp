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

// Asymmetric terms: runs computed from known factors, alpha(own next to neighbour) =
// sensitivity[own] * pressure[neighbour], A hurts B != B hurts A. Workloads (utilization,
// sensitivity, pressure): A (0.9, 1, 0.4), B (0.6, 0.5, 0.1), C (0.5, 2, 0.3), D (0.4, 0, 0.2):
// D never suffers.
struct Truth {
  std::string name;
  double utilization;
  double sensitivity;
  double pressure;
};
const std::vector<Truth> kTruth{
    {"A", 0.9, 1.0, 0.4}, {"B", 0.6, 0.5, 0.1}, {"C", 0.5, 2.0, 0.3}, {"D", 0.4, 0.0, 0.2}};

std::vector<ColocationObservation> factor_runs(bool with_a_and_b) {
  std::vector<ColocationObservation> runs;
  for (const auto& own : kTruth) {
    for (const auto& neighbour : kTruth) {
      const bool a_and_b =
          (own.name == "A" && neighbour.name == "B") || (own.name == "B" && neighbour.name == "A");
      if (a_and_b && !with_a_and_b) continue;
      const InterferenceModel truth{own.sensitivity * neighbour.pressure};
      ColocationObservation run;
      run.own_utilization = own.utilization;
      run.others_utilization = neighbour.utilization;
      run.measured_slowdown =
          truth.iteration_slowdown(own.utilization, own.utilization + neighbour.utilization);
      run.pair = own.name + "+" + neighbour.name;
      runs.push_back(run);
    }
  }
  return runs;
}

TEST(InterferenceFit, AsymmetricTermsAreCrossValidatedPerWorkload) {
  const auto fit = fit_interference(factor_runs(true));
  // 10 unordered pairs of 4 workloads, 16 runs, each predicted by the 9 other pairs.
  EXPECT_EQ(fit.asymmetric.groups, 10u);
  EXPECT_EQ(fit.asymmetric.runs, 16u);
  // The runs are exactly sensitivity x pressure, and every held-out pair is determined by the
  // others (s_A p_B = s_A p_C * s_C p_B / (s_C p_C)): held out the terms predict every run.
  EXPECT_LT(fit.asymmetric.rms_relative_model, 1e-6);
  EXPECT_GT(fit.asymmetric.rms_relative_zero, 0.01);
  ASSERT_EQ(fit.asymmetric.workloads.size(), 4u);
  for (const auto& term : fit.asymmetric.workloads) {
    EXPECT_EQ(term.held_out_runs, 4u) << term.workload;
    // D never suffers: alpha = 0 predicts its runs exactly, so its terms do not beat it and are
    // not used (no model for D); A, B and C are better with them.
    EXPECT_EQ(term.used, term.workload != "D") << term.workload;
  }
  EXPECT_EQ(fit.asymmetric.workloads[3].rms_relative_zero, 0.0);
  EXPECT_NE(fit.verdict.find("used for A"), std::string::npos) << fit.verdict;
  EXPECT_NE(fit.verdict.find("not for D"), std::string::npos) << fit.verdict;
}

TEST(InterferenceFit, AnUnmeasuredPairGetsTheAsymmetricTermsOnlyWhereTheyBeatAlphaZero) {
  // A next to B and B next to A were never measured.
  const auto fit = fit_interference(factor_runs(false));
  const auto& model = fit.model;
  EXPECT_EQ(model.pair_alpha.count("A+B"), 0u);
  // s_A p_B = 1 * 0.1 and s_B p_A = 0.5 * 0.4: A hurts B twice as much as B hurts A.
  EXPECT_NEAR(model.alpha_of_pair("A", "B"), 0.1, 1e-6);
  EXPECT_NEAR(model.alpha_of_pair("B", "A"), 0.2, 1e-6);
  // A measured pair keeps its own measured term.
  EXPECT_NEAR(model.alpha_of_pair("C", "A"), 2.0 * 0.4, 1e-9);
  // D has no terms (not better than alpha = 0): next to an unmeasured neighbour it gets the
  // global alpha; so does any unknown workload.
  EXPECT_EQ(model.sensitivity.count("D"), 0u);
  EXPECT_EQ(model.alpha_of_pair("D", "E"), model.alpha);
  EXPECT_EQ(model.alpha_of_pair("E", "A"), model.alpha);
  // The screen's bound is the smallest term the model can give.
  EXPECT_LE(model.smallest_term(), 0.1);
  // Runs without utilizations measured alone are never fitted: no terms at all.
  auto derived = factor_runs(false);
  for (auto& run : derived) run.utilization_measured = false;
  const auto none = fit_interference(derived);
  EXPECT_TRUE(none.model.sensitivity.empty());
  EXPECT_EQ(none.model.alpha_of_pair("A", "B"), 0.0);
  EXPECT_EQ(none.verdict.rfind("no model: bounded by measured slowdown only", 0), 0u);
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
