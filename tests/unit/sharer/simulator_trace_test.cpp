// The simulator on the real Tiresias 60-job trace with Salus profiles: every policy finishes every
// job, never faster than alone, and the orderings the policies exist for show up.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fleetscope/sharer/simulator.h"
#include "test_paths.h"

namespace fleetscope::sharer {
namespace {

std::vector<SimJob> tiresias() {
  const auto profiles = load_salus_profiles(testing::jobs_data("salus_workloads.csv"));
  return load_tiresias_jobs(testing::jobs_data("tiresias_60_job.csv"), profiles);
}

class TiresiasPolicies : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(TiresiasPolicies, EveryJobFinishesNoFasterThanAlone) {
  const auto jobs = tiresias();
  SimConfig config;
  config.gpus = 8;
  config.lanes = std::get<1>(GetParam());
  const auto result = simulate(jobs, *make_policy(std::get<0>(GetParam())), config);
  ASSERT_EQ(result.jobs.size(), jobs.size());
  for (const auto& job : result.jobs) {
    EXPECT_GE(job.finish_s, job.start_s);
    EXPECT_GE(job.start_s, job.submit_s);
    EXPECT_GE(job.jct_s, job.solo_s - 1e-6) << job.name;
  }
  EXPECT_GT(result.gpu_utilization, 0);
  EXPECT_LE(result.gpu_utilization, 1.0 + 1e-9);
  EXPECT_LE(result.gpus_used_peak, 8);
}

INSTANTIATE_TEST_SUITE_P(AllPolicies, TiresiasPolicies,
                         ::testing::Combine(::testing::ValuesIn(policy_names()),
                                            ::testing::Bool()));

TEST(TiresiasTrace, SrtfBeatsExclusiveFifoOnAverageJct) {
  const auto jobs = tiresias();
  SimConfig config;
  config.gpus = 8;
  config.lanes = false;
  const auto fifo = simulate(jobs, FifoExclusivePolicy{}, config);
  const auto srtf = simulate(jobs, SrtfPolicy{}, config);
  EXPECT_LT(srtf.avg_jct_s, fifo.avg_jct_s);
}

TEST(TiresiasTrace, ResultsAreDeterministic) {
  const auto jobs = tiresias();
  SimConfig config;
  config.gpus = 8;
  const auto first = sim_result_to_json(simulate(jobs, PackPolicy{}, config));
  const auto second = sim_result_to_json(simulate(jobs, PackPolicy{}, config));
  EXPECT_EQ(first, second);
}

TEST(Simulator, RejectsJobsThatCanNeverRun) {
  auto jobs = tiresias();
  SimConfig config;
  config.gpus = 4;  // the trace has 8-GPU jobs
  EXPECT_THROW(simulate(jobs, SrtfPolicy{}, config), std::invalid_argument);
}

}  // namespace
}  // namespace fleetscope::sharer
