// Each built-in rule on a capture built so that it must fire (or must not), with the impact
// computed by hand.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "db_fixture.h"
#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/analyzer/step_metrics.h"
#include "fleetscope/store/reader.h"
#include "shared_case.h"

namespace fleetscope::analyzer {
namespace {

using nlohmann::json;
using testing::us;
constexpr int64_t kMs = 1'000'000;

std::vector<store::Finding> run(const CaptureData& data, const std::string& rule,
                                ThresholdOverrides overrides = {}) {
  AnalyzeOptions options;
  options.rules = {rule};
  options.thresholds = std::move(overrides);
  return analyze(data, options);
}

TEST(RuleRegistry, BuiltinRulesHaveIdsThresholdsAndSources) {
  const auto& rules = RuleRegistry::builtin().rules();
  EXPECT_EQ(rules.size(), 20u);
  for (const auto& rule : rules) {
    EXPECT_FALSE(rule->id().empty());
    EXPECT_FALSE(rule->thresholds().empty()) << rule->id();
    for (const auto& t : rule->thresholds()) EXPECT_FALSE(t.source.empty()) << rule->id();
  }
  ASSERT_NE(RuleRegistry::builtin().find("gpu_idle_gaps"), nullptr);
  EXPECT_EQ(RuleRegistry::builtin().find("gpu_idle_gaps")->thresholds()[0].value, 500e6);
  EXPECT_EQ(RuleRegistry::builtin().find("no_such_rule"), nullptr);
}

TEST(SeverityFor, SharesOfTheDenominator) {
  EXPECT_EQ(severity_for(60, 100), "critical");
  EXPECT_EQ(severity_for(30, 100), "high");
  EXPECT_EQ(severity_for(10, 100), "medium");
  EXPECT_EQ(severity_for(2, 100), "low");
  EXPECT_EQ(severity_for(1, 100), "info");
  EXPECT_EQ(severity_for(5, 0), "info");
}

TEST(GpuIdleGaps, FiresAboveHalfASecondOnly) {
  testing::CaptureBuilder b;
  b.kernel(0, 1 * kMs).kernel(600 * kMs, 601 * kMs).kernel(1000 * kMs, 1001 * kMs);
  auto findings = run(b.build(), "gpu_idle_gaps");
  ASSERT_EQ(findings.size(), 1u);
  const auto& f = findings[0];
  EXPECT_EQ(f.rule, "gpu_idle_gaps");
  EXPECT_EQ(f.impact_ns, 599 * kMs);  // the 399 ms gap is below 500 ms
  EXPECT_EQ(*f.window_start, 1 * kMs);
  EXPECT_EQ(*f.window_end, 600 * kMs);
  EXPECT_EQ(f.severity, "critical");  // 599 of 1001 ms
  auto evidence = json::parse(f.evidence_json);
  EXPECT_EQ(evidence["gap_count"], 1);
  EXPECT_EQ(evidence["thresholds"]["min_gap_ns"], 500e6);
  // Lower the threshold: both gaps count.
  findings = run(b.build(), "gpu_idle_gaps", {{"gpu_idle_gaps.min_gap_ns", 100e6}});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].impact_ns, 998 * kMs);
}

TEST(LowGpuUtilization, ThresholdDecides) {
  EXPECT_TRUE(run(testing::shared_case(), "low_gpu_utilization").empty());  // 76 % busy
  auto findings = run(testing::shared_case(), "low_gpu_utilization",
                      {{"low_gpu_utilization.min_utilization", 0.8}});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].impact_ns, us(120));
  EXPECT_EQ(findings[0].deviceId, 0);
}

TEST(LaunchBoundSmallKernels, BackToBackTinyKernels) {
  // 100 kernels of 5 µs, each launched by a 10 µs call; call i = [12i, 12i+10], kernel i =
  // [12i+12, 12i+17): every gap is 7 µs of kernel wait.
  testing::CaptureBuilder b;
  for (int64_t i = 0; i < 100; ++i)
    b.kernel(us(12 * i + 12), us(12 * i + 17), 7, "elementwise", 0,
             std::make_pair(us(12 * i), us(12 * i + 10)));
  auto findings = run(b.build(), "launch_bound_small_kernels");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].impact_ns, us(99 * 7));
  EXPECT_EQ(findings[0].severity, "critical");  // 693 of 1193 µs
  auto evidence = json::parse(findings[0].evidence_json);
  EXPECT_EQ(evidence["short_kernels"], 100);
  EXPECT_EQ(evidence["top_offenders"][0]["name"], "elementwise");
  EXPECT_EQ(evidence["top_offenders"][0]["count"], 100);
  // The shared case has 1 short kernel of 5 launches: below the 30 % share.
  EXPECT_TRUE(run(testing::shared_case(), "launch_bound_small_kernels").empty());
}

TEST(LongLaunchDelay, ImpactIsIdleTimeWhileDelayed) {
  auto findings = run(testing::shared_case(), "launch_delay_outliers");
  ASSERT_EQ(findings.size(), 1u);
  // K3 waited [255, 400) µs; the device was idle in [320, 400) of that.
  EXPECT_EQ(findings[0].impact_ns, us(80));
  auto evidence = json::parse(findings[0].evidence_json);
  EXPECT_EQ(evidence["delayed_launches"], 1);
  EXPECT_EQ(evidence["launch_delay_max_ns"], us(145));
  EXPECT_TRUE(run(testing::shared_case(), "launch_delay_outliers",
                  {{"launch_delay_outliers.launch_delay_cutoff_ns", 200e3}})
                  .empty());
}

TEST(DataLoaderBottleneck, ShareOfStepsAndIdleOverlap) {
  testing::CaptureBuilder b;
  b.step(1, 0, 100 * kMs).step(2, 100 * kMs, 200 * kMs);
  b.dataloader(0, 20 * kMs).dataloader(100 * kMs, 130 * kMs);
  b.kernel(20 * kMs, 100 * kMs).kernel(125 * kMs, 200 * kMs);
  auto findings = run(b.build(), "dataloader_bottleneck");
  ASSERT_EQ(findings.size(), 1u);
  // GPU idle during the DataLoader's [0,20) and [100,125) → 45 ms.
  EXPECT_EQ(findings[0].impact_ns, 45 * kMs);
  auto evidence = json::parse(findings[0].evidence_json);
  // The step table's figure (the plugin's breakdown: kernels win over the DataLoader in
  // [125,130)): 20 + 25 of 200 ms; the host-side ranges cover 50 ms.
  EXPECT_DOUBLE_EQ(evidence["dataloader_share"].get<double>(), 0.225);
  EXPECT_EQ(evidence["dataloader_host_ns"].get<int64_t>(), 50 * kMs);
  const auto table = dataloader_share(step_breakdown(b.build()));
  ASSERT_TRUE(table.has_value());
  EXPECT_DOUBLE_EQ(table->share(), 0.225);
  EXPECT_NE(findings[0].recommendation.find("22.5 %"), std::string::npos)
      << findings[0].recommendation;
  EXPECT_TRUE(
      run(b.build(), "dataloader_bottleneck", {{"dataloader_bottleneck.max_step_share", 0.3}})
          .empty());
}

TEST(PageableMemcpy, FlagsPageableCopiesOnly) {
  auto findings = run(testing::shared_case(), "pageable_memcpy");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].impact_ns, us(30));
  auto evidence = json::parse(findings[0].evidence_json);
  EXPECT_EQ(evidence["copies"], 1);
  EXPECT_EQ(evidence["bytes"], 4096);
  testing::CaptureBuilder pinned;
  pinned.memcpy(0, 100, 7, store::kMemcpyHtoD, store::kMemPinned, store::kMemDevice, 64);
  EXPECT_TRUE(run(pinned.build(), "pageable_memcpy").empty());
}

TEST(SyncMemcpy, ImpactIsTheIdleGapAfterTheCopy) {
  testing::CaptureBuilder b;
  b.kernel(0, 10);
  b.memcpy(10, 20, 7, store::kMemcpyDtoH, store::kMemDevice, store::kMemPinned, 8,
           std::make_pair(5, 21), "cudaMemcpy");
  b.kernel(50, 60);
  b.memcpy(70, 80, 7, store::kMemcpyHtoD, store::kMemPinned, store::kMemDevice, 8,
           std::make_pair(60, 65), "cudaMemcpyAsync");
  auto findings = run(b.build(), "sync_memcpy");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].impact_ns, 30);
  auto evidence = json::parse(findings[0].evidence_json);
  EXPECT_EQ(evidence["calls"], 1);
  EXPECT_EQ(evidence["top_offenders"][0]["name"], "cudaMemcpy");
}

TEST(SyncMemset, FiresOnCudaMemsetOnly) {
  testing::CaptureBuilder b;
  b.kernel(0, 10);
  b.memcpy(10, 20, 7, store::kMemcpyDtoH, store::kMemDevice, store::kMemPinned, 8,
           std::make_pair(5, 21), "cudaMemset");
  b.raw().gpu.kind.set(b.raw().gpu.kind.size() - 1, GpuEventKind::memset);
  b.kernel(50, 60);
  auto findings = run(b.build(), "sync_memset");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].impact_ns, 30);
  EXPECT_TRUE(run(b.build(), "sync_memcpy").empty());
}

TEST(ExcessiveSync, ManySyncCallsPerStep) {
  testing::CaptureBuilder b;
  b.step(0, 0, us(100));
  // Three cudaDeviceSynchronize calls in one step; after each the GPU idles 10 µs.
  for (int i = 0; i < 3; ++i) {
    b.kernel(us(30 * i), us(30 * i + 20));
    b.runtime(us(30 * i + 5), us(30 * i + 20), "cudaDeviceSynchronize", -1);
  }
  b.kernel(us(90), us(100));
  auto findings = run(b.build(), "excessive_sync");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].impact_ns, us(30));
  EXPECT_EQ(json::parse(findings[0].evidence_json)["calls"], 3);
  // Written as a person would (it said "3.000000 per step").
  EXPECT_EQ(findings[0].recommendation.rfind("3 synchronization calls (3 per step) ", 0), 0u)
      << findings[0].recommendation;
  // One call per step is fine.
  testing::CaptureBuilder clean;
  clean.step(0, 0, us(100)).kernel(0, us(100));
  clean.runtime(us(90), us(100), "cudaStreamSynchronize", -1);
  EXPECT_TRUE(run(clean.build(), "excessive_sync").empty());
}

namespace {
CaptureData with_memory(int64_t capacity, std::vector<int64_t> levels, bool busy) {
  testing::CaptureBuilder b;
  b.step(0, 0, us(100));
  b.kernel(0, busy ? us(100) : us(10));
  CaptureData& d = b.raw();
  store::GpuInfo gpu;
  gpu.id = 0, gpu.captureId = 1, gpu.name = "H100", gpu.totalMemory = capacity;
  d.gpus.push_back(gpu);
  int64_t ts = 0, previous = 0;
  for (int64_t level : levels) {
    store::MemoryEvent e;
    e.ts = ts, e.captureId = 1, e.deviceId = 0, e.bytes = level - previous;
    e.total_allocated = level;
    previous = level, ts += us(10);
    d.memory.push_back(e);
  }
  return b.build();
}
}  // namespace

TEST(MemoryNearCapacity, PeakAboveNinetyPercent) {
  auto findings = run(with_memory(1000, {500, 950, 600}, true), "memory_near_capacity");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(json::parse(findings[0].evidence_json)["peak_bytes"], 950);
  EXPECT_TRUE(run(with_memory(1000, {500, 800, 600}, true), "memory_near_capacity").empty());
  EXPECT_TRUE(run(testing::shared_case(), "memory_near_capacity").empty());  // no data
}

TEST(ConsolidationCandidate, LowUtilizationAndMemoryFits) {
  auto findings = run(with_memory(1000, {100, 200}, false), "consolidation_candidate");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].impact_ns, us(90));  // busy 10 of 100 µs
  EXPECT_TRUE(run(with_memory(1000, {100, 200}, true), "consolidation_candidate").empty());
}

TEST(CommHeavy, ExposedNcclTime) {
  testing::CaptureBuilder b;
  b.kernel(0, us(40), 7, "gemm").kernel(us(20), us(100), 9, "ncclKernel_AllReduce_RING_LL_Sum");
  auto findings = run(b.build(), "comm_heavy");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].impact_ns, us(60));  // 80 µs of NCCL, 20 of it under the GEMM
  testing::CaptureBuilder clean;
  clean.kernel(0, us(100), 7, "gemm").kernel(us(10), us(20), 9, "ncclKernel_AllReduce");
  EXPECT_TRUE(run(clean.build(), "comm_heavy").empty());
}

TEST(TensorCoresUnused, PlainSgemmAboveTwentyPercent) {
  testing::CaptureBuilder b;
  b.kernel(0, 3 * kMs, 7, "volta_sgemm_128x64_nn").kernel(3 * kMs, 4 * kMs, 7, "elementwise");
  auto findings = run(b.build(), "tensor_cores_unused");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].impact_ns, 3 * kMs);
  EXPECT_EQ(json::parse(findings[0].evidence_json)["top_offenders"][0]["count"], 1);
  testing::CaptureBuilder clean;
  clean.kernel(0, 3 * kMs, 7, "volta_h884gemm_128x64_nn").kernel(3 * kMs, 4 * kMs, 7, "add");
  EXPECT_TRUE(run(clean.build(), "tensor_cores_unused").empty());
}

// The advice names only what the GPU has: TF32 and bf16 from compute capability 8.0 (Ampere),
// fp16 tensor cores from 7.0, nothing to recommend below that.
TEST(TensorCoresUnused, AdviceFollowsTheComputeCapability) {
  auto advice_on = [](std::optional<std::pair<int, int>> cc) -> std::optional<std::string> {
    testing::CaptureBuilder b;
    b.kernel(0, 3 * kMs, 7, "volta_sgemm_128x64_nn").kernel(3 * kMs, 4 * kMs, 7, "elementwise");
    if (cc) {
      b.gpu_info(0, 80);
      b.raw().gpus.back().computeMajor = cc->first;
      b.raw().gpus.back().computeMinor = cc->second;
    }
    auto findings = run(b.build(), "tensor_cores_unused");
    if (findings.empty()) return std::nullopt;
    return findings[0].recommendation;
  };
  const auto v100 = advice_on(std::pair{7, 0});
  ASSERT_TRUE(v100.has_value());
  EXPECT_EQ(v100->find("tf32"), std::string::npos) << *v100;
  EXPECT_EQ(v100->find("bf16"), std::string::npos) << *v100;
  EXPECT_NE(v100->find("float16"), std::string::npos) << *v100;
  EXPECT_NE(v100->find("compute capability 7.0"), std::string::npos) << *v100;
  const auto a100 = advice_on(std::pair{8, 0});
  ASSERT_TRUE(a100.has_value());
  EXPECT_NE(a100->find("allow_tf32"), std::string::npos) << *a100;
  const auto h100 = advice_on(std::pair{9, 0});
  ASSERT_TRUE(h100.has_value());
  EXPECT_NE(h100->find("allow_tf32"), std::string::npos) << *h100;
  EXPECT_FALSE(advice_on(std::pair{6, 1}).has_value());  // Pascal: no tensor cores at all
  const auto unknown = advice_on(std::nullopt);
  ASSERT_TRUE(unknown.has_value());
  EXPECT_NE(unknown->find("from compute capability 8.0 (Ampere)"), std::string::npos) << *unknown;
}

TEST(FusionCandidates, RunOfTinyKernelsImpactIsTheGaps) {
  testing::CaptureBuilder b;
  for (int k = 0; k < 10; ++k) b.kernel(us(10 * k), us(10 * k + 5), 7, "add");  // 9 gaps of 5 µs
  auto findings = run(b.build(), "fusion_candidates");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].impact_ns, us(45));
  EXPECT_EQ(json::parse(findings[0].evidence_json)["kernel_count"], 10);
  testing::CaptureBuilder clean;  // a long kernel breaks the run into 5 + 4
  for (int k = 0; k < 10; ++k) clean.kernel(us(100 * k), us(100 * k + (k == 5 ? 50 : 5)), 7, "add");
  EXPECT_TRUE(run(clean.build(), "fusion_candidates").empty());
}

TEST(ExposedTransfers, CopyTimeWithoutKernels) {
  testing::CaptureBuilder b;
  b.kernel(0, us(50), 7, "gemm")
      .memcpy(us(40), us(70), 8, store::kMemcpyHtoD, store::kMemPinned, store::kMemDevice, 4096)
      .kernel(us(70), us(100), 7, "gemm");
  auto findings = run(b.build(), "exposed_transfers");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].impact_ns, us(20));  // 30 µs copy, 10 under the first kernel
  testing::CaptureBuilder clean;
  clean.kernel(0, us(100), 7, "gemm")
      .memcpy(us(40), us(70), 8, store::kMemcpyHtoD, store::kMemPinned, store::kMemDevice, 4096);
  EXPECT_TRUE(run(clean.build(), "exposed_transfers").empty());
}

TEST(LowCommOverlap, NcclMostlyExposed) {
  testing::CaptureBuilder b;
  b.kernel(0, 4 * kMs, 7, "gemm").kernel(3 * kMs, 7 * kMs, 9, "ncclKernel_AllReduce_RING_LL");
  auto findings = run(b.build(), "low_comm_overlap");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].impact_ns, 3 * kMs);  // 1 of 4 ms overlapped: 25 %
  testing::CaptureBuilder clean;
  clean.kernel(0, 8 * kMs, 7, "gemm").kernel(3 * kMs, 7 * kMs, 9, "ncclKernel_AllReduce");
  EXPECT_TRUE(run(clean.build(), "low_comm_overlap").empty());
}

TEST(HostBound, GpuIdleWhileCpuBusy) {
  testing::CaptureBuilder b;  // step 0-10 ms: GPU busy 2 ms, CPU ops over 6 of the 8 idle ms
  b.step(1, 0, 10 * kMs).kernel(0, 2 * kMs, 7, "gemm").cpu_op(2 * kMs, 8 * kMs, "aten::index");
  auto findings = run(b.build(), "host_bound");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].impact_ns, 6 * kMs);
  EXPECT_EQ(json::parse(findings[0].evidence_json)["top_offenders"][0]["name"], "aten::index");
  testing::CaptureBuilder clean;  // GPU busy 8 of 10 ms
  clean.step(1, 0, 10 * kMs).kernel(0, 8 * kMs, 7, "gemm").cpu_op(0, 10 * kMs);
  EXPECT_TRUE(run(clean.build(), "host_bound").empty());
}

// A few microseconds of kernel time are written with their digits, not as "0.00 ms" (the
// Triton example trace: one 1.8 µs kernel, "take 100.0 % of its kernel time (0.00 ms)").
TEST(FewBlocks, MicrosecondsAreNotWrittenAsZero) {
  testing::CaptureBuilder b;
  b.gpu_info(0, 108).kernel(0, 1800, 7, "triton_tiny").shape(1, 32);
  auto findings = run(b.build(), "few_blocks");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].recommendation.find("(0.0018 ms)"), std::string::npos)
      << findings[0].recommendation;
  EXPECT_EQ(findings[0].recommendation.find("0.00 ms"), std::string::npos)
      << findings[0].recommendation;
}

TEST(FewBlocks, GridSmallerThanSmCount) {
  testing::CaptureBuilder b;
  b.gpu_info(0, 132)
      .kernel(0, 3 * kMs, 7, "small")
      .shape(16, 50)
      .kernel(3 * kMs, 4 * kMs, 7, "big")
      .shape(1024, 50);
  auto findings = run(b.build(), "few_blocks");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].impact_ns, 3 * kMs);
  EXPECT_EQ(json::parse(findings[0].evidence_json)["top_offenders"][0]["name"], "small");
  testing::CaptureBuilder clean;
  clean.gpu_info(0, 132).kernel(0, 3 * kMs, 7, "big").shape(1024, 50);
  EXPECT_TRUE(run(clean.build(), "few_blocks").empty());
}

TEST(LowOccupancy, BelowTwentyFivePercent) {
  testing::CaptureBuilder b;
  b.kernel(0, 3 * kMs, 7, "lowocc")
      .shape(1024, 12.5)
      .kernel(3 * kMs, 4 * kMs, 7, "ok")
      .shape(1024, 80);
  auto findings = run(b.build(), "low_occupancy");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].impact_ns, 3 * kMs);
  testing::CaptureBuilder clean;
  clean.kernel(0, 3 * kMs, 7, "ok").shape(1024, 80).kernel(3 * kMs, 4 * kMs, 7, "unknown");
  EXPECT_TRUE(run(clean.build(), "low_occupancy").empty());
}

TEST(Analyze, AllRulesSortedByImpactAndValidated) {
  auto findings = analyze(testing::shared_case());
  ASSERT_EQ(findings.size(), 2u);  // launch_delay_outliers (80 µs) then pageable_memcpy (30 µs)
  EXPECT_EQ(findings[0].rule, "launch_delay_outliers");
  EXPECT_EQ(findings[1].rule, "pageable_memcpy");
  EXPECT_EQ(findings[0].captureId, 1);
  EXPECT_GT(findings[0].created_ns, 0);
  AnalyzeOptions bad_rule;
  bad_rule.rules = {"nope"};
  EXPECT_THROW(analyze(testing::shared_case(), bad_rule), std::invalid_argument);
  AnalyzeOptions bad_threshold;
  bad_threshold.thresholds = {{"gpu_idle_gaps.nope", 1}};
  EXPECT_THROW(analyze(testing::shared_case(), bad_threshold), std::invalid_argument);
}

TEST(Analyze, StoredFindingsReplaceEarlierOnes) {
  testing::TempDir dir;
  const std::string db = dir.file("t.db");
  auto ids = testing::write_shared_case(db);
  for (int round = 0; round < 2; ++round) {
    std::vector<store::Finding> findings;
    {
      store::Reader reader(db);
      findings = analyze(load_capture(reader, ids.capture));
    }
    store::Writer writer(store::Database::open(db, store::OpenMode::read_write));
    auto new_ids = store_findings(writer, ids.capture, findings);
    EXPECT_EQ(new_ids.size(), findings.size());
    writer.finish();
  }
  store::Reader reader(db);
  auto stored = reader.findings(ids.capture);
  ASSERT_EQ(stored.size(), 2u);  // not 4: the second run replaced the first
  std::set<std::string> rules;
  for (const auto& f : stored) rules.insert(f.rule);
  EXPECT_TRUE(rules.count("launch_delay_outliers"));
  EXPECT_TRUE(rules.count("pageable_memcpy"));
}

}  // namespace
}  // namespace fleetscope::analyzer
