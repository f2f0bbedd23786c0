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

// The GEMMs without tensor cores, not the tensor-core one nor the elementwise kernel.
TEST(FindingEvents, TensorCoresUnusedListsThePlainGemms) {
  testing::CaptureBuilder b;
  b.kernel(0, 2 * kMs, 7, "volta_sgemm_128x64_nn")
      .kernel(3 * kMs, 7 * kMs, 7, "volta_sgemm_64x64_nt")
      .kernel(8 * kMs, 9 * kMs, 7, "volta_h884gemm_64x64_nt")
      .kernel(10 * kMs, 11 * kMs, 7, "elementwise_kernel");
  const json e = evidence_of(b.build(), "tensor_cores_unused");
  ASSERT_EQ(e["offending_events"].size(), 2u);
  EXPECT_EQ(e["offending_events"][0]["name"], "volta_sgemm_64x64_nt");  // the longest first
  EXPECT_EQ(e["offending_events"][1]["name"], "volta_sgemm_128x64_nn");
  EXPECT_EQ(e["focus"], json::array({{3 * kMs, 7 * kMs}}));
}

// The kernels of the longest run of tiny kernels, with that run as the focus.
TEST(FindingEvents, FusionCandidatesListTheLongestRunsKernels) {
  testing::CaptureBuilder b;
  constexpr int64_t kUs = 1000;
  for (int i = 0; i < 8; ++i) b.kernel(i * 10 * kUs, i * 10 * kUs + 2 * kUs, 7, "add");
  for (int i = 0; i < 9; ++i)  // the longer run, on another stream, later
    b.kernel(kMs + i * 20 * kUs, kMs + i * 20 * kUs + 3 * kUs, 9, "mul");
  const json e = evidence_of(b.build(), "fusion_candidates");
  ASSERT_EQ(e["offending_events"].size(), 9u);
  for (const json& event : e["offending_events"]) {
    EXPECT_EQ(event["name"], "mul");
    EXPECT_EQ(event["stream"], 9);
  }
  EXPECT_EQ(e["focus"], json::array({{kMs, kMs + 8 * 20 * kUs + 3 * kUs}}));
}

// The copies that run while no kernel does; the focus is the longest exposed stretch.
TEST(FindingEvents, ExposedTransfersListTheCopiesNoKernelHides) {
  testing::CaptureBuilder b;
  b.kernel(0, 10 * kMs)
      .memcpy(1 * kMs, 2 * kMs, 8, 1, 1, 2, 1 << 20)    // under the kernel: hidden
      .memcpy(12 * kMs, 15 * kMs, 8, 1, 1, 2, 1 << 20)  // exposed, 3 ms
      .memcpy(9 * kMs, 11 * kMs, 8, 1, 1, 2, 1 << 20)   // 1 ms of it exposed
      .kernel(20 * kMs, 30 * kMs);
  const json e = evidence_of(b.build(), "exposed_transfers");
  ASSERT_EQ(e["offending_events"].size(), 2u);
  EXPECT_EQ(e["offending_events"][0]["start"], 12 * kMs);
  EXPECT_EQ(e["offending_events"][1]["start"], 9 * kMs);
  EXPECT_EQ(e["offending_events"][0]["kind"], "memcpy");
  EXPECT_EQ(e["focus"], json::array({{12 * kMs, 15 * kMs}}));
}

}  // namespace
}  // namespace fleetscope::analyzer
