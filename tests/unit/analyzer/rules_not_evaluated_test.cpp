// Rules whose input the capture lacks report "not evaluated: needs X" instead of passing
// silently; with the input present but no antipattern they are evaluated and stay silent.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "capture_builder.h"
#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/report.h"

namespace fleetscope::analyzer {
namespace {

using nlohmann::json;
using testing::us;

const RuleOutcome& outcome(const AnalysisResult& result, const std::string& rule) {
  for (const RuleOutcome& r : result.rules)
    if (r.rule == rule) return r;
  throw std::logic_error("no outcome for " + rule);
}

AnalysisResult run(const CaptureData& data, const std::string& rule) {
  AnalyzeOptions options;
  options.rules = {rule};
  return analyze_capture(data, options);
}

bool needs(const RuleOutcome& r, const char* what) {
  return std::find(r.needs.begin(), r.needs.end(), what) != r.needs.end();
}

TEST(NotEvaluated, EveryRuleNamesWhatItNeedsOnACaptureWithoutGpuActivity) {
  testing::CaptureBuilder b;
  b.cpu_op(0, us(100)).step(0, 0, us(100));
  const AnalysisResult result = analyze_capture(b.build());
  ASSERT_EQ(result.rules.size(), RuleRegistry::builtin().rules().size());
  EXPECT_TRUE(result.findings.empty());
  EXPECT_EQ(result.not_evaluated().size(), result.rules.size());
  for (const RuleOutcome& r : result.rules) {
    SCOPED_TRACE(r.rule);
    EXPECT_FALSE(r.evaluated);
    EXPECT_EQ(r.findings, 0u);
    ASSERT_FALSE(r.needs.empty());
    EXPECT_EQ(r.not_evaluated_text().rfind("not evaluated: needs ", 0), 0u);
  }
  EXPECT_TRUE(needs(outcome(result, "gpu_idle_gaps"), needs::gpu_activity));
  EXPECT_TRUE(needs(outcome(result, "few_blocks"), needs::kernels));
  EXPECT_TRUE(needs(outcome(result, "few_blocks"), needs::sm_count));
}

TEST(NotEvaluated, DataLoaderNeedsGpuWorkStepsAndCpuOps) {
  testing::CaptureBuilder with_both;
  with_both.cpu_op(0, us(100)).step(0, 0, us(100)).kernel(0, us(100));
  EXPECT_TRUE(
      outcome(run(with_both.build(), "dataloader_bottleneck"), "dataloader_bottleneck").evaluated);
  testing::CaptureBuilder no_steps;
  no_steps.cpu_op(0, us(100)).kernel(0, us(100));
  const RuleOutcome r =
      outcome(run(no_steps.build(), "dataloader_bottleneck"), "dataloader_bottleneck");
  EXPECT_FALSE(r.evaluated);
  EXPECT_EQ(r.needs, std::vector<std::string>{needs::steps});
  testing::CaptureBuilder no_cpu;
  no_cpu.step(0, 0, us(100)).kernel(0, us(100));
  EXPECT_EQ(outcome(run(no_cpu.build(), "dataloader_bottleneck"), "dataloader_bottleneck").needs,
            std::vector<std::string>{needs::cpu_ops});
}

TEST(NotEvaluated, FewBlocksNeedsGridThenSmCount) {
  testing::CaptureBuilder no_grid;
  no_grid.gpu_info(0, 132).kernel(0, us(100), 7, "small");
  EXPECT_EQ(outcome(run(no_grid.build(), "few_blocks"), "few_blocks").needs,
            std::vector<std::string>{needs::grid});
  testing::CaptureBuilder no_sms;
  no_sms.kernel(0, us(100), 7, "small").shape(16, 50);
  EXPECT_EQ(outcome(run(no_sms.build(), "few_blocks"), "few_blocks").needs,
            std::vector<std::string>{needs::sm_count});
  testing::CaptureBuilder both;
  both.gpu_info(0, 132).kernel(0, us(100), 7, "small").shape(16, 50);
  const RuleOutcome r = outcome(run(both.build(), "few_blocks"), "few_blocks");
  EXPECT_TRUE(r.evaluated);
  EXPECT_EQ(r.findings, 1u);
}

TEST(NotEvaluated, LowOccupancyNeedsOccupancy) {
  testing::CaptureBuilder b;
  b.kernel(0, us(100), 7, "k");
  EXPECT_EQ(outcome(run(b.build(), "low_occupancy"), "low_occupancy").needs,
            std::vector<std::string>{needs::occupancy});
}

TEST(NotEvaluated, PageableMemcpyNeedsMemoryKindsOnlyWhenThereAreCopies) {
  testing::CaptureBuilder unknown;
  unknown.memcpy(0, us(10), 7, store::kMemcpyHtoD, -1, -1, 64);
  EXPECT_EQ(outcome(run(unknown.build(), "pageable_memcpy"), "pageable_memcpy").needs,
            std::vector<std::string>{needs::memory_kinds});
  testing::CaptureBuilder kernels_only;
  kernels_only.kernel(0, us(10));
  EXPECT_TRUE(outcome(run(kernels_only.build(), "pageable_memcpy"), "pageable_memcpy").evaluated);
}

TEST(NotEvaluated, LaunchRulesNeedApiCallsAndCorrelation) {
  testing::CaptureBuilder no_calls;
  no_calls.kernel(0, us(10));
  EXPECT_EQ(
      outcome(run(no_calls.build(), "launch_bound_small_kernels"), "launch_bound_small_kernels")
          .needs,
      std::vector<std::string>{needs::runtime_calls});
  testing::CaptureBuilder uncorrelated;
  uncorrelated.kernel(0, us(10)).runtime(0, us(1), "cudaLaunchKernel", -1);
  EXPECT_EQ(
      outcome(run(uncorrelated.build(), "launch_delay_outliers"), "launch_delay_outliers").needs,
      std::vector<std::string>{needs::launch_correlation});
  testing::CaptureBuilder linked;
  linked.kernel(us(5), us(10), 7, "gemm", 0, std::make_pair(int64_t{0}, us(1)));
  EXPECT_TRUE(
      outcome(run(linked.build(), "launch_delay_outliers"), "launch_delay_outliers").evaluated);
}

TEST(NotEvaluated, ExcessiveSyncCountsPerStepSoNeedsSteps) {
  testing::CaptureBuilder b;
  b.kernel(0, us(10)).runtime(us(10), us(20), "cudaDeviceSynchronize", -1);
  EXPECT_EQ(outcome(run(b.build(), "excessive_sync"), "excessive_sync").needs,
            std::vector<std::string>{needs::steps});
}

TEST(NotEvaluated, ConsolidationNeedsMemoryOnlyForAnIdleGpu) {
  testing::CaptureBuilder busy;
  busy.step(0, 0, us(100)).kernel(0, us(100));
  EXPECT_TRUE(
      outcome(run(busy.build(), "consolidation_candidate"), "consolidation_candidate").evaluated);
  testing::CaptureBuilder idle;
  idle.step(0, 0, us(100)).kernel(0, us(10));
  EXPECT_EQ(outcome(run(idle.build(), "consolidation_candidate"), "consolidation_candidate").needs,
            std::vector<std::string>{needs::memory_events});
}

TEST(NotEvaluated, MemoryNearCapacityNeedsEventsAndCapacity) {
  testing::CaptureBuilder b;
  b.kernel(0, us(10));
  const RuleOutcome r = outcome(run(b.build(), "memory_near_capacity"), "memory_near_capacity");
  EXPECT_EQ(r.needs, (std::vector<std::string>{needs::memory_events, needs::gpu_capacity}));
  EXPECT_EQ(r.not_evaluated_text(), std::string("not evaluated: needs ") + needs::memory_events +
                                        "; " + needs::gpu_capacity);
}

TEST(NotEvaluated, ReportsListTheRulesAndWhatTheyNeed) {
  testing::CaptureBuilder b;
  b.kernel(0, us(10), 7, "k");
  const AnalysisResult result = analyze_capture(b.build());
  ReportHeader header;
  header.capture_id = 1;
  header.rules = result.rules;
  std::ostringstream table, markdown, js;
  render_findings(result.findings, ReportFormat::table, header, table);
  render_findings(result.findings, ReportFormat::markdown, header, markdown);
  render_findings(result.findings, ReportFormat::json, header, js);
  EXPECT_NE(table.str().find(std::string("few_blocks") + std::string(28 - 10, ' ') +
                             "not evaluated: needs " + needs::grid),
            std::string::npos)
      << table.str();
  EXPECT_NE(markdown.str().find("## Rules not evaluated"), std::string::npos);
  EXPECT_NE(markdown.str().find("| `low_occupancy` | "), std::string::npos);
  const json doc = json::parse(js.str());
  size_t not_evaluated = 0;
  for (const json& r : doc["rules"]) {
    if (r["status"] == "not_evaluated") {
      ++not_evaluated;
      EXPECT_FALSE(r["needs"].empty());
    }
    if (r["rule"] == "gpu_idle_gaps") {
      EXPECT_EQ(r["status"], "evaluated");
    }
  }
  EXPECT_EQ(not_evaluated, result.not_evaluated().size());
  EXPECT_GT(not_evaluated, 0u);
}

}  // namespace
}  // namespace fleetscope::analyzer
