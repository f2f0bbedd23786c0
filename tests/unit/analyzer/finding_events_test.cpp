// Findings carry their offending events (kind, name, times and track, longest first) and a tight
// "focus" window around the worst instance, so a viewer can mark them and jump there.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "capture_builder.h"
#include "fleetscope/analyzer/analysis.h"

namespace fleetscope::analyzer {
namespace {

using nlohmann::json;
constexpr int64_t kMs = 1'000'000;

json evidence_of(const CaptureData& data, const std::string& rule) {
  AnalyzeOptions options;
  options.rules = {rule};
  const auto findings = analyze(data, options);
  EXPECT_EQ(findings.size(), 1u) << rule;
  return findings.empty() ? json() : json::parse(findings[0].evidence_json);
}

TEST(FindingEvents, KernelsOfAShapeRuleLongestFirstWithTheirTrack) {
  testing::CaptureBuilder b;
  b.gpu_info(0, 132)
      .kernel(0, 1 * kMs, 7, "small")
      .shape(16, 50)
      .kernel(2 * kMs, 5 * kMs, 9, "small")
      .shape(16, 50)
      .kernel(6 * kMs, 7 * kMs, 7, "big")
      .shape(1024, 50);
  const json e = evidence_of(b.build(), "few_blocks");
  ASSERT_EQ(e["offending_events"].size(), 2u);  // not the big kernel
  const json& worst = e["offending_events"][0];
  EXPECT_EQ(worst["kind"], "kernel");
  EXPECT_EQ(worst["name"], "small");
  EXPECT_EQ(worst["start"], 2 * kMs);
  EXPECT_EQ(worst["end"], 5 * kMs);
  EXPECT_EQ(worst["device"], 0);
  EXPECT_EQ(worst["stream"], 9);
  EXPECT_EQ(e["offending_events"][1]["start"], 0);
  // The focus is the worst instance, not the finding's window (0 .. 5 ms).
  EXPECT_EQ(e["focus"], json::array({{2 * kMs, 5 * kMs}}));
}

TEST(FindingEvents, AnIdleGapFindingFocusesOnTheLongestGap) {
  testing::CaptureBuilder b;
  b.kernel(0, 1 * kMs).kernel(600 * kMs, 601 * kMs).kernel(1400 * kMs, 1401 * kMs);
  const json e = evidence_of(b.build(), "gpu_idle_gaps");
  EXPECT_EQ(e["focus"], json::array({{601 * kMs, 1400 * kMs}}));
  EXPECT_FALSE(e.contains("offending_events"));
}

TEST(FindingEvents, AtMostFiftyEventsAreListed) {
  testing::CaptureBuilder b;
  b.gpu_info(0, 132);
  for (int i = 0; i < 80; ++i) b.kernel(i * kMs, i * kMs + 500'000 + i, 7, "small").shape(16, 50);
  const json e = evidence_of(b.build(), "few_blocks");
  ASSERT_EQ(e["offending_events"].size(), 50u);
  EXPECT_EQ(e["offending_events"][0]["start"], 79 * kMs);  // the longest
}

}  // namespace
}  // namespace fleetscope::analyzer
