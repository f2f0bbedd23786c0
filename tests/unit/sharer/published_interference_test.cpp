// The interference model's published default (Gavel's V100 co-location pairs, compiled in) and
// the two ways to replace it: a local calibration file and --interference-alpha.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "fleetscope/sharer/commands.h"
#include "fleetscope/sharer/interference.h"
#include "test_paths.h"

namespace fleetscope::sharer {
namespace {

using testing::jobs_data;
using testing::scratch_file;

const std::string kPublishedFile =
    std::string(FLEETSCOPE_SHARER_DATA_DIR) + "/gavel_v100_colocation.csv";

nlohmann::json run_json(int (*command)(const std::vector<std::string>&, std::ostream&,
                                       std::ostream&),
                        std::vector<std::string> args) {
  args.insert(args.end(), {"--format", "json"});
  std::ostringstream out, err;
  EXPECT_EQ(command(args, out, err), 0) << err.str();
  return nlohmann::json::parse(out.str());
}

// Runs generated from alpha = 0.25, written in the GPU check's format (with a comment line), one
// pair of workloads each, so every pair can be held out.
std::string calibration_file() {
  std::string text =
      "# co-location runs, one GPU (format of scripts/gpu/colocation.py)\n"
      "own_utilization,others_utilization,measured_slowdown,pair,utilization_source\n";
  const InterferenceModel truth{0.25};
  int pair = 0;
  for (double own : {0.5, 1.0}) {
    for (double others : {0.5, 1.0}) {
      text += std::to_string(own) + "," + std::to_string(others) + "," +
              std::to_string(truth.iteration_slowdown(own, own + others)) + ",w" +
              std::to_string(pair) + "+x" + std::to_string(pair) + ",measured_alone\n";
      ++pair;
    }
  }
  return scratch_file("runs.csv", text);
}

const std::string kCandidates = R"([
  {"job_id": "a", "workflow": "w", "gpu": "gpu0", "persistent_bytes": 2147483648,
   "ephemeral_peak_bytes": 1073741824, "gpu_capacity_bytes": 17179869184,
   "utilization": 0.3, "iteration_ns": 100000000},
  {"job_id": "b", "workflow": "w", "gpu": "gpu1", "persistent_bytes": 2147483648,
   "ephemeral_peak_bytes": 1073741824, "gpu_capacity_bytes": 17179869184,
   "utilization": 0.3, "iteration_ns": 100000000}
])";

TEST(PublishedInterference, TheCompiledInRunsAreTheShippedFileFittedTheSameWay) {
  const auto& compiled = published_colocation_runs();
  const auto from_file = load_colocation_runs(kPublishedFile);
  ASSERT_EQ(compiled.size(), from_file.size());
  ASSERT_GT(compiled.size(), 500u);  // every fitting pair of 26 models, both directions
  for (size_t i = 0; i < compiled.size(); ++i) {
    EXPECT_EQ(compiled[i].own_utilization, from_file[i].own_utilization) << i;
    EXPECT_EQ(compiled[i].others_utilization, from_file[i].others_utilization) << i;
    EXPECT_EQ(compiled[i].measured_slowdown, from_file[i].measured_slowdown) << i;
  }
  const auto& published = published_interference();
  EXPECT_EQ(published.source, "published");
  EXPECT_EQ(published.runs, compiled.size());
  // One path: the published default is fit_interference over those runs, and a local
  // calibration from the same file gives the same answer.
  EXPECT_DOUBLE_EQ(published.model.alpha, fit_interference(compiled).model.alpha);
  EXPECT_DOUBLE_EQ(interference_from_file(kPublishedFile).model.alpha, published.model.alpha);
  EXPECT_NE(published.description.find("Gavel"), std::string::npos);
}

TEST(PublishedInterference, PublishedPairsAreNotFittedTheirUtilizationIsDerived) {
  // Gavel's utilizations are estimated from the self-pairs' slowdowns: fitting slowdowns to them
  // is circular, so the default is "no model" (alpha = 0) and says so.
  const auto& compiled = published_colocation_runs();
  const auto fit = fit_interference(compiled);
  EXPECT_EQ(fit.runs_excluded, compiled.size());
  EXPECT_EQ(fit.runs_fitted, 0u);
  EXPECT_FALSE(fit.model_used);
  EXPECT_EQ(fit.model.alpha, 0.0);
  const auto& published = published_interference();
  EXPECT_FALSE(published.model_used);
  EXPECT_EQ(published.model.alpha, 0.0);
  EXPECT_NE(published.description.find("no model: bounded by measured slowdown only"),
            std::string::npos);
  // Even taken at face value, the fit does not beat alpha = 0 on pairs it did not see.
  auto face_value = compiled;
  for (auto& run : face_value) run.utilization_measured = true;
  const auto naive = fit_interference(face_value);
  EXPECT_GT(naive.fitted_alpha, 0.0);
  EXPECT_GT(naive.held_out.groups, 100u);
  EXPECT_GE(naive.held_out.rms_relative_fitted, naive.held_out.rms_relative_zero);
  EXPECT_FALSE(naive.model_used);
}

TEST(PublishedInterference, ModelIsUsedOnlyWhereItBeatsAlphaZeroOnHeldOutPairs) {
  // Pairs a and b are the throughput bound exactly; pair c alone shows contention. Holding c out,
  // the others fit alpha = 0 and miss c as alpha = 0 does; holding a or b out, c's alpha is
  // applied where there is none: the fit is worse than alpha = 0 on held-out pairs.
  std::vector<ColocationObservation> runs{{1.0, 1.0, 2.0, "a1+a2"}, {1.0, 1.0, 2.0, "a2+a1"},
                                          {0.5, 0.5, 1.0, "b1+b2"}, {0.5, 0.5, 1.0, "b2+b1"},
                                          {0.5, 0.5, 1.6, "c1+c2"}, {0.5, 0.5, 1.6, "c2+c1"}};
  const auto fit = fit_interference(runs);
  EXPECT_GT(fit.fitted_alpha, 0.0);
  EXPECT_EQ(fit.held_out.groups, 3u);
  EXPECT_FALSE(fit.model_used);
  EXPECT_EQ(fit.model.alpha, 0.0);
  EXPECT_NE(fit.verdict.find("no model"), std::string::npos);
  // When every pair shows the same contention, the fit predicts held-out pairs and is used.
  std::vector<ColocationObservation> consistent;
  const InterferenceModel truth{0.3};
  for (const char* pair : {"a+b", "c+d", "e+f"}) {
    consistent.push_back({0.5, 0.5, truth.iteration_slowdown(0.5, 1.0), pair});
  }
  const auto good = fit_interference(consistent);
  EXPECT_TRUE(good.model_used);
  EXPECT_NEAR(good.model.alpha, 0.3, 1e-9);
}

TEST(PublishedInterference, PairTermsAreAsymmetric) {
  // A next to B slows 1.5x, B next to A 1.1x (at U = 1 the throughput bound is 1, so
  // 1.5 = 0.5 (1 + alpha 0.5) + 0.5 gives alpha 2, and 1.1 gives 0.4).
  const auto fit = fit_interference({{0.5, 0.5, 1.5, "A+B"}, {0.5, 0.5, 1.1, "B+A"}});
  ASSERT_EQ(fit.pair_terms.size(), 2u);
  EXPECT_EQ(fit.pair_terms[0].pair, "A+B");
  EXPECT_NEAR(fit.pair_terms[0].alpha, 2.0, 1e-12);
  EXPECT_EQ(fit.pair_terms[1].pair, "B+A");
  EXPECT_NEAR(fit.pair_terms[1].alpha, 0.4, 1e-12);
}

TEST(PublishedInterference, PredictionErrorsUseNearestRankQuantiles) {
  // alpha = 0, alone on the GPU (U = 0.5): predicted 1.0 for every run, errors 0.1 .. 1.0.
  std::vector<ColocationObservation> runs;
  for (int i = 1; i <= 10; ++i) runs.push_back({0.25, 0.25, 1.0 + 0.1 * i});
  const auto errors = prediction_errors(InterferenceModel{0.0}, runs);
  EXPECT_NEAR(errors.median_absolute, 0.5, 1e-12);
  EXPECT_NEAR(errors.p90_absolute, 0.9, 1e-12);
  EXPECT_NEAR(errors.max_absolute, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(errors.optimistic_share, 1.0);
}

TEST(PublishedInterference, SimAndSharePlanSayTheyUsedThePublishedDefault) {
  const auto sim = run_json(run_sim_command, {"--jobs", jobs_data("tiresias_60_job.csv"), "--gpus",
                                              "8", "--policy", "pack"});
  EXPECT_EQ(sim.at("interference").at("source"), "published");
  EXPECT_DOUBLE_EQ(sim.at("interference").at("alpha").get<double>(),
                   published_interference().model.alpha);
  const auto plan =
      run_json(run_share_plan_command, {"--candidates", scratch_file("c.json", kCandidates)});
  EXPECT_EQ(plan.at("interference").at("source"), "published");
  // The table names it too.
  std::ostringstream out, err;
  ASSERT_EQ(run_sim_command(
                {"--jobs", jobs_data("tiresias_60_job.csv"), "--gpus", "8", "--policy", "fifo"},
                out, err),
            0);
  EXPECT_NE(out.str().find("interference: no model: bounded by measured slowdown only"),
            std::string::npos);
  EXPECT_NE(out.str().find("published default"), std::string::npos);
}

TEST(PublishedInterference, ACalibrationFileOverridesTheDefault) {
  const auto runs = calibration_file();
  const auto sim = run_json(run_sim_command, {"--jobs", jobs_data("tiresias_60_job.csv"), "--gpus",
                                              "8", "--policy", "pack", "--calibration", runs});
  EXPECT_EQ(sim.at("interference").at("source"), "calibration");
  EXPECT_NEAR(sim.at("interference").at("alpha").get<double>(), 0.25, 1e-6);
  EXPECT_NE(sim.at("interference").at("description").get<std::string>().find(runs),
            std::string::npos);
  const auto plan =
      run_json(run_share_plan_command,
               {"--candidates", scratch_file("c.json", kCandidates), "--calibration", runs});
  EXPECT_EQ(plan.at("interference").at("source"), "calibration");
  EXPECT_NEAR(plan.at("interference").at("alpha").get<double>(), 0.25, 1e-6);
  // A value on the command line overrides it as well, and says so.
  const auto flagged =
      run_json(run_share_plan_command,
               {"--candidates", scratch_file("c.json", kCandidates), "--interference-alpha", "0"});
  EXPECT_EQ(flagged.at("interference").at("source"), "flag");
  EXPECT_EQ(flagged.at("interference").at("alpha").get<double>(), 0.0);
}

TEST(PublishedInterference, CalibrateCommandFitsThePublishedRunsOrAFile) {
  const auto published = run_json(run_share_calibrate_command, {"--published"});
  EXPECT_EQ(published.at("source"), "published");
  EXPECT_DOUBLE_EQ(published.at("alpha").get<double>(), published_interference().model.alpha);
  EXPECT_EQ(published.at("model_used"), false);
  EXPECT_EQ(published.at("runs_fitted"), 0);
  const auto local = run_json(run_share_calibrate_command, {"--runs", calibration_file()});
  EXPECT_EQ(local.at("source"), "calibration");
  EXPECT_NEAR(local.at("alpha").get<double>(), 0.25, 1e-6);
  EXPECT_EQ(local.at("model_used"), true);
  EXPECT_EQ(local.at("held_out").at("pairs"), 4);
  EXPECT_NEAR(local.at("held_out").at("rms_relative_fitted").get<double>(), 0.0, 1e-5);
  EXPECT_GT(local.at("held_out").at("rms_relative_alpha_zero").get<double>(), 0.0);
  // It also says how well the published default predicts the local runs (the GPU check's report).
  EXPECT_DOUBLE_EQ(local.at("published_default_alpha").get<double>(),
                   published_interference().model.alpha);
  EXPECT_GT(local.at("errors_published_default").at("median_absolute").get<double>(), 0.0);
  EXPECT_NEAR(local.at("errors_calibrated").at("max_absolute").get<double>(), 0.0, 1e-5);
  std::ostringstream out, err;
  EXPECT_EQ(run_share_calibrate_command({}, out, err), 2);
  EXPECT_EQ(run_share_calibrate_command({"--published", "--runs", "x.csv"}, out, err), 2);
}

TEST(PublishedInterference, CommentLinesCountForErrorPositions) {
  const auto path = scratch_file("bad.csv",
                                 "# source\n# more\nown_utilization,others_utilization,"
                                 "measured_slowdown\n0.5,0.5,abc\n");
  try {
    load_colocation_runs(path);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(path + ":4:"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("measured_slowdown"), std::string::npos);
  }
}

}  // namespace
}  // namespace fleetscope::sharer
