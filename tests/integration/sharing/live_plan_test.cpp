// Plans from live data (issue 21) and one analysis session (issue 23): a host database written
// through the daemon's own store API (HostStore) the way fleetscoped writes it for two running
// jobs traced on demand: each keeps its GPU about 20 % busy and holds about 4 GB, allocated
// before the window (the window sees no memory events), and the daemon's NVML sampling recorded
// their per-process memory in workflow_metrics.
//   - `share plan HOST.db` plans both onto one GPU, with P + T from NVML, and says so;
//   - `candidates` says where each figure came from;
//   - the analysis session (what the GUI and the daemon call) gives the plan `share plan` prints,
//     byte for byte.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "fleetscope/analyzer/session.h"
#include "fleetscope/cli/command.h"
#include "fleetscope/daemon/host_store.h"
#include "fleetscope/sharer/host_planning.h"
#include "fleetscope/store/rows.h"
#include "temp_dir.h"

namespace fleetscope {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kStart = 1'700'000'000'000'000'000;
constexpr int64_t kJobBytes = 4'000'000'000;  // NVML's per-process used memory of each job
constexpr int64_t kGpuBytes = int64_t{80} << 30;

struct Job {
  int pid;
  std::string workflow;
  int64_t offset_ns;  // the window's start after kStart
};

// One on-demand window on a running job: 100 iterations of 10 ms, each with 2 ms of kernels (20 %
// busy), no memory events (the caching allocator holds what it allocated before the window).
void trace_window(daemon::HostStore& store, const Job& job) {
  const int64_t workflow = store.workflow_id(job.workflow, std::string("alice"));
  const int64_t start = kStart + job.offset_ns;
  const int64_t capture = store.open_capture("pid " + std::to_string(job.pid), start);
  store.upsert_process(capture, job.pid, workflow, "python train.py", start - 3600'000 * kMs);
  store.set_capture_owner(capture, 1000, workflow);
  rpc::RecordBatch batch;
  batch.capture_id = capture;
  rpc::GpuInfoRecord gpu;
  gpu.id = 0;
  gpu.name = "NVIDIA H100 80GB HBM3";
  gpu.__set_uuid("GPU-5f6e7d8c-0000-1111-2222-333344445555");
  gpu.__set_totalMemory(kGpuBytes);
  batch.gpus.push_back(gpu);
  for (int step = 0; step < 100; ++step) {
    const int64_t begin = start + step * 10 * kMs;
    rpc::IterationRecord iteration;
    iteration.__set_globalPid(store::global_pid(job.pid));
    iteration.step = step;
    iteration.start_ns = begin;
    iteration.end_ns = begin + 10 * kMs;
    iteration.source = "ProfilerStep";
    batch.iterations.push_back(iteration);
    for (int k = 0; k < 4; ++k) {
      rpc::KernelRecord kernel;
      kernel.start_ns = begin + 1 * kMs + k * kMs / 2;
      kernel.end_ns = kernel.start_ns + kMs / 2;
      kernel.deviceId = 0;
      kernel.streamId = 7;
      kernel.__set_globalPid(store::global_pid(job.pid));
      kernel.demangledName = "void gemm_kernel<float>()";
      kernel.gridX = kernel.gridY = kernel.gridZ = 1;
      kernel.blockX = kernel.blockY = kernel.blockZ = 1;
      batch.kernels.push_back(kernel);
    }
  }
  store.commit_batch(batch, capture);
  store.close_capture(capture, start + 1000 * kMs, 0, 0, std::nullopt);
}

// What the daemon's workflow aggregator writes each metrics window (daemon/workflow_metrics.cpp).
void sample_nvml(daemon::HostStore& store, const Job& job) {
  std::vector<daemon::WorkflowMetricRow> rows;
  for (int window = 0; window < 5; ++window) {
    const int64_t begin = kStart + window * 60'000 * kMs, end = begin + 60'000 * kMs;
    // The peak grows to its steady state over the first windows.
    const double peak = window == 0 ? kJobBytes / 2 : kJobBytes;
    rows.push_back(
        {job.workflow,
         {.window_start = begin, .window_end = end, .metric = "gpu_seconds", .value = 60.0}});
    rows.push_back(
        {job.workflow,
         {.window_start = begin, .window_end = end, .metric = "busy_fraction", .value = 0.2}});
    rows.push_back(
        {job.workflow,
         {.window_start = begin, .window_end = end, .metric = "memory_peak_bytes", .value = peak}});
  }
  store.add_workflow_metrics(rows);
}

struct CliResult {
  int code;
  std::string out, err;
};
CliResult fleetscope(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = cli::run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

class LivePlan : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon::HostStore store(db_, "node1");
    for (const Job& job : jobs_) {
      trace_window(store, job);
      sample_nvml(store, job);
    }
  }

  test_support::TempDir dir_;
  const std::string db_ = dir_.file("host.db");
  const std::string config_ = dir_.file("no-such-fleetscoped.conf");  // the default context
  const std::vector<Job> jobs_{{4101, "train-a", 0}, {4202, "train-b", 2000 * kMs}};
};

TEST_F(LivePlan, SharePlanPutsBothJobsOnOneGpuFromNvmlMemory) {
  const auto result = fleetscope({"share", "plan", db_, "--format", "json", "--config", config_});
  ASSERT_EQ(result.code, 0) << result.err;
  const auto plan = nlohmann::json::parse(result.out);
  ASSERT_EQ(plan.at("jobs").size(), 2u) << result.out;
  EXPECT_EQ(plan.at("not_planned").size(), 0u) << result.out;
  const auto& a = plan.at("jobs")[0];
  const auto& b = plan.at("jobs")[1];
  EXPECT_FALSE(a.at("to_gpu").get<std::string>().empty()) << result.out;
  EXPECT_EQ(a.at("to_gpu"), b.at("to_gpu")) << result.out;
  EXPECT_EQ(plan.at("gpus").size(), 1u);
  EXPECT_EQ(plan.at("gpus_after"), 1);
  for (const auto& job : plan.at("jobs")) {
    // NVML's 4 GB peak is P + T; T is unknown without memory events (0); the CUDA context in
    // NVML's figure is left to the memory model, which charges it itself.
    EXPECT_EQ(job.at("persistent_bytes"), kJobBytes - 300 * (int64_t{1} << 20)) << job;
    EXPECT_EQ(job.at("ephemeral_peak_bytes"), 0) << job;
    EXPECT_EQ(job.at("memory_evidence").get<std::string>().rfind("nvml: fleetscoped NVML: peak "),
              0u)
        << job;
  }
  const auto table = fleetscope({"share", "plan", db_, "--config", config_});
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("GPUs: 1 -> 1"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("P and T: nvml: fleetscoped NVML: peak 3814 MiB over 5 metric window"),
            std::string::npos)
      << table.out;
}

TEST_F(LivePlan, CandidatesSayWhereTheirNumbersComeFrom) {
  const auto result = fleetscope({"candidates", db_, "--format", "json"});
  ASSERT_EQ(result.code, 0) << result.err;
  const auto rows = nlohmann::json::parse(result.out);
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    EXPECT_EQ(row.at("memory_evidence"), "nvml") << row;
    EXPECT_TRUE(row.at("memory_includes_context").get<bool>());
    EXPECT_TRUE(row.at("candidate").get<bool>()) << row;
    EXPECT_NEAR(row.at("utilization").get<double>(), 0.2, 0.01);
  }
  const auto table = fleetscope({"candidates", db_});
  EXPECT_NE(table.out.find("P and T: nvml: fleetscoped NVML"), std::string::npos) << table.out;
}

TEST_F(LivePlan, WithoutNvmlFiguresTheJobsAreNotPlannedAndTheOutputSaysWhy) {
  const std::string bare = dir_.file("bare.db");
  {
    daemon::HostStore store(bare, "node1");
    for (const Job& job : jobs_) trace_window(store, job);
  }
  const auto result = fleetscope({"share", "plan", bare, "--format", "json", "--config", config_});
  ASSERT_EQ(result.code, 0) << result.err;
  const auto plan = nlohmann::json::parse(result.out);
  EXPECT_EQ(plan.at("jobs").size(), 0u);
  ASSERT_EQ(plan.at("not_planned").size(), 2u);
  EXPECT_EQ(plan.at("not_planned")[0],
            "train-a on GPU 0: P and T unknown (no memory events in the window, no NVML figure "
            "from fleetscoped)");
}

TEST_F(LivePlan, TheAnalysisSessionGivesSharePlansPlanByteForByte) {
  // What the GUI and the daemon call: open, plan with the host's settings.
  analyzer::AnalysisSession session;
  session.open(db_);
  const auto mine = sharer::plan_to_json(session.plan(sharer::host_planning(config_).options));
  auto cli = nlohmann::json::parse(
      fleetscope({"share", "plan", db_, "--format", "json", "--config", config_}).out);
  for (const char* extra : {"interference", "context_source", "not_planned"}) cli.erase(extra);
  EXPECT_EQ(mine.dump(2), cli.dump(2));
  // Job ids name the database by its file name, however the path was given.
  EXPECT_EQ(mine.at("jobs")[0].at("job_id"), "train-a@host.db#capture1/gpu0");
}

}  // namespace
}  // namespace fleetscope
