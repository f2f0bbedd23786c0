// `share plan DB`: the analyzer's consolidation candidates reach the planner with everything the
// analyzer measured, the per-iteration variation of T included (it used to be dropped, so the
// planner always used its 2 % prior); a job the analyzer keeps on its GPU (busy) is not planned.

#include <gtest/gtest.h>

#include "db_fixture.h"
#include "fleetscope/analyzer/session.h"
#include "fleetscope/cli/integrations.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/sharer/commands.h"
#include "fleetscope/sharer/gpu_advice.h"
#include "temp_dir.h"

namespace fleetscope::cli {
namespace {

TEST(CandidateLoader, CopiesTheMeasuredEphemeralDeviation) {
  fleetscope::test_support::TempDir dir;
  analyzer::testing::write_shared_case(dir.file("t.db"));
  // The fixture keeps its GPU 76 % busy: not a co-location candidate, so `share plan` does not
  // plan it and says why (the analysis session's planner inputs, shared with the GUI).
  const auto set = candidates_from_databases({dir.file("t.db")}, sharer::MemoryModel{});
  EXPECT_TRUE(set.jobs.empty());
  ASSERT_EQ(set.skipped.size(), 1u);
  EXPECT_EQ(set.skipped[0], "resnet-train on GPU 0: not a candidate: GPU utilization 76 %");
  // Its job profile (what `candidates --format profiles` lists) carries everything measured.
  analyzer::AnalysisSession session;
  session.open(dir.file("t.db"));
  const auto candidates = session.candidates();
  ASSERT_EQ(candidates.size(), 1u);
  const std::vector<sharer::JobProfile> jobs{
      session.job_profile(candidates[0], 0, sharer::MemoryModel{})};
  // The fixture's two iterations peak at 256 and 512 MiB of ephemeral memory.
  EXPECT_DOUBLE_EQ(jobs[0].peak_stddev_bytes, 128.0 * 1024 * 1024);
  // Two steps of 250 us: the p99 (nearest rank) is the slowest, what the planner bounds.
  EXPECT_EQ(jobs[0].iteration_p99_ns, 250'000);
  EXPECT_EQ(jobs[0].persistent_bytes, int64_t{1} << 30);
  EXPECT_EQ(jobs[0].ephemeral_peak_bytes, 512 * int64_t{1} << 20);
  EXPECT_EQ(jobs[0].memory_evidence.rfind("trace: ", 0), 0u) << jobs[0].memory_evidence;
}

// `fleetscope advise DB`: a real V100 training capture (HTA's ns-resolution trace, 5 profiler
// steps) reaches the advisor with its GPU name, its steps and its kernels; the advisor then
// predicts it on other types. Figures measured on this trace (docs/sharer.md): FP32 matrix
// kernels 61.7 % of the step, memory-bound 37.5 %, idle 0.8 %.
TEST(AdviseLoader, ARealCaptureReachesTheAdvisor) {
  fleetscope::test_support::TempDir dir;
  importers::import_files({std::string(FLEETSCOPE_SHARED_DATA) +
                           "/traces/kineto/hta-ns_resolution_trace_rank-0.json.gz"},
                          dir.file("v100.db"));
  const sharer::CapturedWork work = captured_work_from_database(dir.file("v100.db"), std::nullopt);
  EXPECT_EQ(work.gpu_names.at(0), "Tesla V100-SXM2-32GB");
  EXPECT_EQ(work.steps.size(), 5u);
  const sharer::WorkProfile profile = sharer::profile_work(work, sharer::busiest_device(work));
  ASSERT_EQ(profile.steps.size(), 5u);
  const auto from = sharer::find_gpu_spec(profile.gpu_name);
  ASSERT_TRUE(from);
  EXPECT_EQ(from->id, "V100-SXM2");
  const sharer::Advice advice = sharer::advise(profile, *from, {});
  const double fp32 = advice.share_of_step[static_cast<size_t>(sharer::WorkBound::fp32_compute)];
  const double memory = advice.share_of_step[static_cast<size_t>(sharer::WorkBound::memory)];
  EXPECT_NEAR(fp32, 0.617, 0.005);
  EXPECT_NEAR(memory, 0.375, 0.005);
  // Every type between its memory-bound and compute-bound speedup (the idle 0.8 % pulls towards
  // 1); the V100 row predicts the measured steps exactly.
  for (const auto& row : advice.types) {
    const double memory_speedup = row.spec.memory_gbs / from->memory_gbs;
    const double compute_speedup = row.spec.fp32_tflops / from->fp32_tflops;
    EXPECT_LE(row.speedup, std::max({memory_speedup, compute_speedup, 1.0}) + 1e-9) << row.spec.id;
    EXPECT_GE(row.speedup, std::min({memory_speedup, compute_speedup, 1.0}) - 1e-9) << row.spec.id;
    if (row.spec.id == "V100-SXM2") {
      EXPECT_NEAR(row.speedup, 1.0, 1e-12);
    }
  }
  EXPECT_EQ(advice.recommended_id, "H200-SXM");  // the fastest per step without other goals

  // The command end to end (the CLI wires the loader).
  wire_integrations();
  std::ostringstream out, err;
  EXPECT_EQ(sharer::run_advise_command({dir.file("v100.db"), "--to", "A100-40GB-SXM4,H100-SXM",
                                        "--steps", "100000", "--format", "json"},
                                       out, err),
            0)
      << err.str();
  EXPECT_NE(out.str().find("\"recommended\": \"H100-SXM\""), std::string::npos) << out.str();
  err.str("");
  EXPECT_EQ(sharer::run_advise_command({dir.file("v100.db"), "--device", "3"}, out, err), 1);
  EXPECT_NE(err.str().find("device 3 has no GPU activity"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace fleetscope::cli
