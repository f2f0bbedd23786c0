// Hand-computed cases for the analyses beyond HTA's headline metrics: memory bandwidth per copy
// kind, time blocked on a full launch queue, per-kernel statistics with HTA's "others" folding,
// idle-interval samples, the step-time distribution and the tail_steps rule.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "capture_builder.h"
#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/kernel_stats.h"
#include "fleetscope/analyzer/memory_bandwidth.h"
#include "fleetscope/analyzer/metrics.h"
#include "fleetscope/analyzer/metrics_json.h"
#include "fleetscope/analyzer/queue_length.h"

namespace fleetscope::analyzer {
namespace {

using nlohmann::json;
using testing::us;
constexpr int64_t kMs = 1'000'000;
constexpr int32_t kHtoD = 1, kPageable = 0, kDevice = 1;

TEST(MemoryBandwidth, RunningSumOfConcurrentCopiesPerKind) {
  testing::CaptureBuilder b;
  // 2000 B over 1000 ns = 2 GB/s; 1000 B over 1000 ns = 1 GB/s, overlapping the first by half.
  b.memcpy(0, 1000, 7, kHtoD, kPageable, kDevice, 2000);
  b.memcpy(500, 1500, 8, kHtoD, kPageable, kDevice, 1000);
  b.kernel(0, 2000, 7, "dma_request");  // HTA MEMORY, "Memcpy Unknown", no bytes
  const CaptureData data = b.build();
  const auto series = memory_bandwidth_time_series(data);
  ASSERT_EQ(series.size(), 2u);
  const MemoryBandwidthSeries& htod = series[0];
  EXPECT_EQ(htod.copy_kind, "Memcpy HtoD");
  ASSERT_EQ(htod.points.size(), 4u);
  EXPECT_DOUBLE_EQ(htod.points[0].gbps, 2.0);
  EXPECT_DOUBLE_EQ(htod.points[1].gbps, 3.0);
  EXPECT_DOUBLE_EQ(htod.points[2].gbps, 1.0);
  EXPECT_DOUBLE_EQ(htod.points[3].gbps, 0.0);
  EXPECT_EQ(htod.points[3].time_ns, 1500);

  const auto summary = memory_bandwidth_summary(data);
  ASSERT_EQ(summary.size(), 2u);
  EXPECT_EQ(summary[0].count, 2);
  EXPECT_EQ(summary[0].bytes, 3000);
  EXPECT_EQ(summary[0].busy_ns, 2000);
  EXPECT_EQ(summary[0].gbps.count, 3) << "the zero point is left out, as HTA does";
  EXPECT_DOUBLE_EQ(summary[0].gbps.mean, 2.0);
  EXPECT_DOUBLE_EQ(summary[0].gbps.max, 3.0);
  EXPECT_DOUBLE_EQ(summary[0].gbps.std, 1.0);
  EXPECT_EQ(summary[1].copy_kind, "Memcpy Unknown");
  EXPECT_EQ(summary[1].gbps.count, 0);
  EXPECT_EQ(hta_memory_kernel_type("Memset (Device)"), "Memset");
  EXPECT_EQ(hta_memory_kernel_type("Memcpy DtoD (Device -> Device)"), "Memcpy DtoD");
}

TEST(BlockedOnFullQueue, SumsTheTimeAtOrAboveTheLimit) {
  QueueLengthSeries s;
  s.device = 0, s.stream = 7;
  s.points = {{0, 1023}, {10, 1024}, {30, 1024}, {40, 1023}, {50, 1024}};
  const auto blocked = time_blocked_on_full_queue({s});
  ASSERT_EQ(blocked.size(), 1u);
  EXPECT_EQ(blocked[0].blocked_ns, 30) << "10..30 and 30..40; the last point adds nothing";
  s.points = {{0, 5}, {10, 6}};
  EXPECT_TRUE(time_blocked_on_full_queue({s}).empty());
}

TEST(KernelStats, FoldsPastTheTopAndTheDurationQuantileIntoOthers) {
  testing::CaptureBuilder b;
  // Twelve kernels k0..k11 with totals 12..1 µs: running sums 12, 23, ..., 77, 78; their 0.8
  // quantile is 72 + 0.8 * (75 - 72) = 74.4, so k9 (75), k10 and k11 fold into "others".
  int64_t t = 0;
  for (int k = 0; k < 12; ++k) {
    b.kernel(t, t + us(12 - k), 7, "k" + std::to_string(k));
    t += us(20);
  }
  b.kernel(t, t + us(4), 7, "k_pair").kernel(t + us(10), t + us(18), 7, "k_pair");  // 12 µs
  const auto stats = kernel_stats(b.build());
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].kernel_type, "COMPUTATION");
  // k_pair ties k0 at 12 µs; names break the tie.
  ASSERT_EQ(stats[0].top.size(), 10u);
  EXPECT_EQ(stats[0].top[0].name, "k0");
  EXPECT_EQ(stats[0].top[1].name, "k_pair");
  EXPECT_EQ(stats[0].top[1].count, 2);
  EXPECT_DOUBLE_EQ(stats[0].top[1].mean_ns, us(6));
  EXPECT_NEAR(stats[0].top[1].std_ns, std::sqrt(8.0) * 1000, 1e-6);
  EXPECT_EQ(stats[0].top.back().name, "k8");
  EXPECT_EQ(stats[0].others_kernels, 3);
  EXPECT_EQ(stats[0].others_sum_ns, us(3 + 2 + 1));
}

TEST(IdleIntervals, KeptPerCategoryWhenAsked) {
  testing::CaptureBuilder b;
  b.kernel(0, 100, 7, "a", 0, std::pair<int64_t, int64_t>{0, 10});
  b.kernel(110, 200, 7, "b", 0, std::pair<int64_t, int64_t>{20, 30});    // 10 ns: kernel wait
  b.kernel(500, 600, 7, "c", 0, std::pair<int64_t, int64_t>{300, 310});  // host wait (300 > 200)
  IdleTimeOptions options;
  options.keep_intervals = true;
  const auto rows = idle_time_breakdown(b.build(), options);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].kernel_wait_intervals_ns, std::vector<int64_t>{10});
  EXPECT_EQ(rows[0].host_wait_intervals_ns, std::vector<int64_t>{300});
  EXPECT_TRUE(rows[0].other_intervals_ns.empty());
  EXPECT_TRUE(idle_time_breakdown(b.build()).at(0).host_wait_intervals_ns.empty());
}

CaptureData steps_with_one_slow() {
  testing::CaptureBuilder b;
  // Four 10 ms steps and one 20 ms step whose extra time is a DataLoader fetch.
  int64_t t = 0;
  for (int k = 0; k < 5; ++k) {
    const int64_t length = k == 3 ? 20 * kMs : 10 * kMs;
    b.step(k, t, t + length);
    b.kernel(t + 1 * kMs, t + 9 * kMs);
    if (k == 3) b.dataloader(t + 9 * kMs, t + 19 * kMs);
    t += length;
  }
  return b.build();
}

TEST(StepStats, TailQuantilesAndJitter) {
  const StepStats s = step_stats(steps_with_one_slow());
  EXPECT_EQ(s.count, 5);
  EXPECT_EQ(s.median_ns, 10 * kMs);
  EXPECT_EQ(s.p90_ns, 20 * kMs);
  EXPECT_EQ(s.p99_ns, 20 * kMs);
  EXPECT_EQ(s.min_ns, 10 * kMs);
  // mean 12 ms; sample std sqrt((4 * 4 + 64) / 4) ms = sqrt(20) ms.
  EXPECT_NEAR(s.std_ns, std::sqrt(20.0) * kMs, 1e-3);
  EXPECT_NEAR(s.jitter, std::sqrt(20.0) / 12.0, 1e-9);
  const json j = metrics_json(steps_with_one_slow());
  EXPECT_EQ(j.at("step_time").at("p99_ns"), 20 * kMs);
}

TEST(TailSteps, NamesTheSlowStepAndWhatCoincides) {
  AnalyzeOptions options;
  options.rules = {"tail_steps"};
  const auto findings = analyze(steps_with_one_slow(), options);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].impact_ns, 10 * kMs);
  const json e = json::parse(findings[0].evidence_json);
  EXPECT_EQ(e.at("slow_steps"), 1);
  EXPECT_EQ(e.at("slowest").at(0).at("step"), 3);
  EXPECT_EQ(e.at("coincides").at(0).at("what"), "DataLoader (input pipeline)");
  EXPECT_EQ(e.at("coincides").at(0).at("excess_ns"), 10 * kMs);
  EXPECT_NE(findings[0].recommendation.find("DataLoader"), std::string::npos);

  // Even steps: no finding.
  testing::CaptureBuilder even;
  for (int k = 0; k < 5; ++k)
    even.step(k, k * 10 * kMs, (k + 1) * 10 * kMs).kernel(k * 10 * kMs, k * 10 * kMs + kMs);
  EXPECT_TRUE(analyze(even.build(), options).empty());
}

}  // namespace
}  // namespace fleetscope::analyzer
