// Hand-computed cases for the analyses beyond HTA's headline metrics: memory bandwidth per copy
// kind, time blocked on a full launch queue, per-kernel statistics with HTA's "others" folding,
// idle-interval samples, the step-time distribution and the tail_steps rule.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "capture_builder.h"
#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/consolidation.h"
#include "fleetscope/analyzer/kernel_sequences.h"
#include "fleetscope/analyzer/kernel_stats.h"
#include "fleetscope/analyzer/memory_bandwidth.h"
#include "fleetscope/analyzer/metrics.h"
#include "fleetscope/analyzer/metrics_json.h"
#include "fleetscope/analyzer/op_tables.h"
#include "fleetscope/analyzer/queue_length.h"
#include "fleetscope/analyzer/step_metrics.h"

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
  // Four 10 ms steps and one 20 ms step whose extra time is a DataLoader fetch, then a 1 ms last
  // ProfilerStep that the capture's end cut short (not a step: counted_steps()).
  int64_t t = 0;
  for (int k = 0; k < 5; ++k) {
    const int64_t length = k == 3 ? 20 * kMs : 10 * kMs;
    b.step(k, t, t + length);
    b.kernel(t + 1 * kMs, t + 9 * kMs);
    if (k == 3) b.dataloader(t + 9 * kMs, t + 19 * kMs);
    t += length;
  }
  b.step(5, t, t + 1 * kMs);
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

// HTA get_frequent_cuda_kernel_sequences: roots are the shallowest "aten::" ops that launched
// at least three GPU events; a nested match is not a root of its own.
CaptureData two_linears() {
  testing::CaptureBuilder b;
  for (int k = 0; k < 2; ++k) {
    const int64_t t = k * us(1000);
    b.cpu_op(t, t + us(100), "aten::linear");
    b.cpu_op(t + us(10), t + us(90), "aten::addmm");  // nested: depth 1
    b.kernel(t + us(200), t + us(210), 7, "gemm", 0,
             std::pair<int64_t, int64_t>{t + us(20), t + us(25)});
    b.kernel(t + us(212), t + us(215), 7, "bias", 0,
             std::pair<int64_t, int64_t>{t + us(30), t + us(35)});
    b.kernel(t + us(220), t + us(222), 7, "relu", 0,
             std::pair<int64_t, int64_t>{t + us(40), t + us(45)});
  }
  b.cpu_op(us(5000), us(5100), "aten::add");  // one kernel: below the minimum length
  b.kernel(us(5200), us(5210), 7, "add", 0, std::pair<int64_t, int64_t>{us(5010), us(5015)});
  CaptureData& raw = b.raw();
  for (HostRange& op : raw.cpu_ops) op.global_tid = raw.runtime.global_tid.front();
  return b.build();
}

TEST(KernelSequences, ShallowestOpsWithThreeOrMoreKernels) {
  const auto sequences = frequent_kernel_sequences(two_linears());
  ASSERT_EQ(sequences.size(), 1u);
  const KernelSequence& s = sequences[0];
  EXPECT_EQ(s.pattern(), "aten::linear|gemm|bias|relu");
  EXPECT_EQ(s.count, 2);
  EXPECT_EQ(s.gpu_ns, 2 * us(10 + 3 + 2));
  EXPECT_EQ(s.cpu_op_ns, 2 * us(100));
  EXPECT_EQ(s.gap_ns, 2 * us(2 + 5));
  KernelSequenceOptions addmm;
  addmm.operator_name = "aten::addmm";
  ASSERT_EQ(frequent_kernel_sequences(two_linears(), addmm).size(), 1u);
  addmm.min_pattern_len = 4;
  EXPECT_TRUE(frequent_kernel_sequences(two_linears(), addmm).empty());

  // One shallow aten op elsewhere (depth 0, no kernels) hides the linears from HTA's roots;
  // outermost_per_chain keeps them.
  CaptureData shallow = two_linears();
  const int64_t tid = shallow.cpu_ops.front().global_tid;
  shallow.cpu_ops.push_back({us(9000), us(9001), shallow.intern("aten::empty"), tid});
  shallow.cpu_ops.push_back({-us(10), us(2000), shallow.intern("ProfilerStep#1"), tid});
  EXPECT_TRUE(frequent_kernel_sequences(shallow).empty());
  KernelSequenceOptions per_chain;
  per_chain.outermost_per_chain = true;
  ASSERT_EQ(frequent_kernel_sequences(shallow, per_chain).size(), 1u);
}

// The plugin's operator and kernel views on a nested op: linear > addmm launches a gemm, linear
// itself launches a bias kernel.
TEST(OpTables, SelfAndTotalHostAndDeviceTimes) {
  testing::CaptureBuilder b;
  b.cpu_op(0, us(100), "aten::linear").cpu_op(us(10), us(60), "aten::addmm");
  b.kernel(us(200), us(230), 7, "gemm", 0, std::pair<int64_t, int64_t>{us(20), us(25)});
  b.kernel(us(240), us(245), 7, "bias", 0, std::pair<int64_t, int64_t>{us(70), us(75)});
  b.kernel(us(300), us(301), 7, "orphan");
  CaptureData& raw = b.raw();
  for (HostRange& op : raw.cpu_ops) op.global_tid = raw.runtime.global_tid.front();
  const CaptureData data = b.build();
  const OpTree tree = build_op_tree(data);
  const auto ops = operator_table(data, tree);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].name, "aten::addmm");
  EXPECT_EQ(ops[0].self_device_ns, us(30));
  EXPECT_EQ(ops[0].device_ns, us(30));
  EXPECT_EQ(ops[0].self_host_ns, us(50));
  EXPECT_EQ(ops[1].name, "aten::linear");
  EXPECT_EQ(ops[1].device_ns, us(35));
  EXPECT_EQ(ops[1].self_device_ns, us(5));
  EXPECT_EQ(ops[1].host_ns, us(100));
  EXPECT_EQ(ops[1].self_host_ns, us(50));
  const auto kernels = kernel_table(data, tree);
  ASSERT_EQ(kernels.size(), 3u);
  EXPECT_EQ(kernels[0].name, "gemm");
  EXPECT_EQ(kernels[0].op, "aten::addmm");
  EXPECT_EQ(kernels[1].op, "aten::linear");
  EXPECT_EQ(kernels[2].op, "N/A");
}

// The allocator's side of the memory timeline: reserved peak, fragmentation, churn.
TEST(MemoryTimeline, ReservedPeakFragmentationAndChurn) {
  auto event = [](int64_t ts, int64_t bytes, int64_t allocated, int64_t reserved) {
    store::MemoryEvent e;
    e.ts = ts, e.bytes = bytes, e.total_allocated = allocated, e.total_reserved = reserved;
    return e;
  };
  const std::vector<store::MemoryEvent> events = {event(10, 100, 100, 256), event(20, 50, 150, 256),
                                                  event(30, -50, 100, 256),
                                                  event(40, 200, 300, 512)};
  const MemoryFootprint fp = memory_footprint(events, {});
  EXPECT_EQ(fp.peak_bytes, 300);
  EXPECT_EQ(fp.reserved_peak_bytes, 512);
  EXPECT_DOUBLE_EQ(fp.fragmentation, 1.0 - 300.0 / 512.0);
  EXPECT_EQ(fp.allocations, 3);
  EXPECT_EQ(fp.allocated_bytes, 350);
  EXPECT_EQ(fp.footprint_bytes(), 512) << "the allocator holds more than P + T (300)";

  testing::CaptureBuilder b;
  b.kernel(0, 100).step(1, 0, 25).step(2, 25, 50);
  CaptureData data = b.build();
  data.memory = events;
  const auto rows = memory_by_device(data);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].reserved_peak_bytes, 512);
  ASSERT_EQ(rows[0].iterations.size(), 2u);
  EXPECT_EQ(rows[0].iterations[0].allocations, 2);
  EXPECT_EQ(rows[0].iterations[0].allocated_bytes, 150);
  EXPECT_EQ(rows[0].iterations[0].reserved_peak_bytes, 256);
  EXPECT_EQ(rows[0].iterations[1].allocations, 1);
  EXPECT_EQ(rows[0].iterations[1].reserved_peak_bytes, 512);
  const json j = metrics_json(data);
  EXPECT_EQ(j.at("memory").at("0").at("reserved_peak_bytes"), 512);
  EXPECT_EQ(j.at("iterations").at(1).at("memory").at("0").at("allocated_bytes"), 200);
}

}  // namespace
}  // namespace fleetscope::analyzer
