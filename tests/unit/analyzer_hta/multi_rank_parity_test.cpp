// Multi-rank analysis against HTA 0.5.0's get_potential_stragglers on two ranks of one real job
// (the shared traces timeline_analysis_sampled rank 0 and trace_filter_sampled rank 1, steps
// 551-552 of a 128-rank run): the metric kernel, each rank's normalized start time, the mean
// iteration time and the straggler list, as pinned in hta_reference.json ("rank_sets", made by
// compute_reference.py). Also the rank_straggler finding built on it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "fleetscope/analyzer/capture_sink.h"
#include "fleetscope/analyzer/multi_rank.h"

namespace fleetscope::analyzer {
namespace {

using nlohmann::json;

const json& rank_set() {
  static const json set = [] {
    std::ifstream in(HTA_REFERENCE_JSON);
    if (!in) throw std::runtime_error("cannot read " + std::string(HTA_REFERENCE_JSON));
    return json::parse(in).at("rank_sets").at("sampled_ranks_0_1");
  }();
  return set;
}

struct Job {
  std::vector<CaptureData> captures;
  std::vector<RankInput> ranks;
};

const Job& job() {
  static const Job loaded = [] {
    Job j;
    for (const auto& file : rank_set().at("files"))
      j.captures.push_back(load_trace_file(std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" +
                                           file.get<std::string>()));
    for (size_t i = 0; i < j.captures.size(); ++i) {
      const auto rank = capture_rank(j.captures[i]);
      if (!rank) throw std::runtime_error("no distributedInfo.rank in the shared trace");
      j.ranks.push_back({*rank, rank_set().at("files")[i].get<std::string>(), &j.captures[i]});
    }
    return j;
  }();
  return loaded;
}

TEST(HtaParityStragglers, MetricKernelAndNormalizedStartTimes) {
  const json& hta = rank_set();
  ASSERT_EQ(job().ranks.size(), 2u);
  EXPECT_EQ(job().ranks[0].rank, 0);
  EXPECT_EQ(job().ranks[1].rank, 1);
  const StragglerAnalysis ours = potential_stragglers(job().ranks);
  ASSERT_TRUE(ours.not_computed.empty()) << ours.not_computed;
  EXPECT_EQ(json(ours.iterations), hta.at("profiler_steps"));
  const double hta_mean_us = hta.at("mean_iter_time_us").get<double>();
  EXPECT_NEAR(ours.mean_iter_time_ns / 1000.0, hta_mean_us, 0.005 * hta_mean_us);
  ASSERT_EQ(ours.metric.size(), hta.at("metric").size());
  for (const json& want : hta.at("metric")) {
    const StragglerMetricRow* row = nullptr;
    for (const auto& m : ours.metric)
      if (m.rank == want.at("rank").get<int32_t>() &&
          m.iteration == want.at("iteration").get<int64_t>())
        row = &m;
    ASSERT_NE(row, nullptr) << "rank " << want.at("rank");
    EXPECT_EQ(row->stream, want.at("stream").get<int32_t>());
    EXPECT_EQ(row->kernel, want.at("kernel").get<std::string>());
    EXPECT_EQ(row->start_ns, want.at("start_us").get<int64_t>() * 1000);
    EXPECT_EQ(row->duration_ns, want.at("dur_us").get<int64_t>() * 1000);
    EXPECT_NEAR(row->normalized_start_time, want.at("normalized_start_time").get<double>(), 0.005)
        << "rank " << row->rank;
  }
}

TEST(HtaParityStragglers, PotentialStragglers) {
  const json& hta = rank_set().at("potential_stragglers");
  StragglerOptions one;
  one.num_candidates = 1;
  EXPECT_EQ(json(potential_stragglers(job().ranks, one).stragglers), hta.at("1"));
  // With two candidates of two ranks both are stragglers; HTA's order of the tie is its
  // unstable sort's, so the set is compared.
  const auto two = potential_stragglers(job().ranks).stragglers;
  EXPECT_EQ(std::set<int32_t>(two.begin(), two.end()), hta.at("2").get<std::set<int32_t>>());
}

TEST(MultiRank, FindingNamesTheSlowRankAndWhy) {
  const MultiRankResult result = analyze_ranks(job().ranks);
  ASSERT_EQ(result.summaries.size(), 2u);
  for (const auto& s : result.summaries) {
    EXPECT_GT(s.steps.count, 0) << "rank " << s.rank;
    EXPECT_GT(s.compute_ns, 0) << "rank " << s.rank;
    EXPECT_GT(s.communication_ns, 0) << "rank " << s.rank;
  }
  ASSERT_TRUE(result.finding.has_value())
      << "rank 1 reaches the collective at 0.71 of the iteration, rank 0 at 0.44 (HTA)";
  const json e = json::parse(result.finding->evidence_json);
  EXPECT_EQ(e.at("slow_rank"), 1);
  EXPECT_EQ(e.at("fastest_rank"), 0);
  EXPECT_LT(e.at("relative_score").get<double>(), 0.7);
  EXPECT_EQ(e.at("why").size(), 4u);
  EXPECT_NE(result.finding->recommendation.find("Rank 1"), std::string::npos);
  EXPECT_GT(result.finding->impact_ns, 0);
  const json j = multi_rank_json(result);
  EXPECT_EQ(j.at("ranks").size(), 2u);
  EXPECT_EQ(j.at("findings").size(), 1u);
}

TEST(MultiRank, OneRankHasNoStragglers) {
  const StragglerAnalysis one = potential_stragglers({job().ranks[0]});
  EXPECT_FALSE(one.not_computed.empty());
  EXPECT_TRUE(one.stragglers.empty());
}

}  // namespace
}  // namespace fleetscope::analyzer
