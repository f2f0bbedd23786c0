// The sharing service in real processes: fleetscoped hosts the lane allocator and the iteration
// gate; `fleetscope run --share` asks it for a lane and starts lane_member (a stand-in job that
// reaches the stand-in libcuda.so.1) with the interposition library; plans come from `fleetscope
// share plan` and are applied with `fleetscope share apply`.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "harness.h"

namespace fleetscope::test_support {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr int64_t kGiB = int64_t{1} << 30;

class SharingDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override { start_daemon(); }
  void start_daemon() {
    // One stand-in GPU of 80 GiB; lane ledgers in the test's folder.
    daemon_.start({}, {"FLEETSCOPE_NVML_STANDIN_DEVICES=1",
                       "FLEETSCOPE_LANE_DIR=" + daemon_.dir.path().string()});
  }
  void TearDown() override {
    if (daemon_.process) {
      EXPECT_EQ(daemon_.stop(), 0);
    }
  }

  std::vector<std::string> env() const {
    // Under the asan preset the jobs `run --share` starts preload the (instrumented) lanes
    // library, so the sanitizer runtime is not first in their list (as in lanes/member_process.h).
    return {"FLEETSCOPE_SOCKET=" + daemon_.api_socket, "LD_LIBRARY_PATH=" STAND_IN_DIR,
            "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0"};
  }
  std::unique_ptr<Child> start_cli(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{FLEETSCOPE_CLI};
    argv.insert(argv.end(), args.begin(), args.end());
    return std::make_unique<Child>(argv, env());
  }
  static ProgramResult finish(Child& child, std::chrono::milliseconds timeout = 20s) {
    ProgramResult result;
    while (auto line = child.wait_line("", timeout)) result.output += *line + "\n";
    if (auto status = child.wait_exit(timeout); status && WIFEXITED(*status))
      result.exit_code = WEXITSTATUS(*status);
    return result;
  }
  ProgramResult cli(const std::vector<std::string>& args) const {
    auto child = start_cli(args);
    return finish(*child);
  }
  json share_status() const {
    auto result = cli({"share", "status", "--format", "json"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    return json::parse(result.output);
  }
  std::vector<std::string> event_kinds() const {
    std::vector<std::string> kinds;
    const json status = share_status();  // kept alive for the loop
    for (const auto& e : status["events"]) kinds.push_back(e["kind"]);
    return kinds;
  }
  // A plan by `fleetscope share plan` for two 10 ms-per-iteration jobs (P 4 GiB, T 2 GiB) that
  // each leave their GPU 80 % idle: they share one lane of one GPU.
  std::string make_plan() const {
    json candidates = json::array();
    for (const char* workflow : {"wa", "wb"}) {
      candidates.push_back({{"job_id", std::string(workflow) + "-job"},
                            {"workflow", workflow},
                            {"gpu", std::string("old-gpu-") + workflow},
                            {"persistent_bytes", 4 * kGiB},
                            {"ephemeral_peak_bytes", 2 * kGiB},
                            {"gpu_capacity_bytes", 80 * kGiB},
                            {"utilization", 0.2},
                            {"iteration_ns", 10'000'000}});
    }
    const std::string candidates_path = daemon_.dir.file("candidates.json");
    std::ofstream(candidates_path) << candidates.dump();
    auto planned = cli({"share", "plan", "--candidates", candidates_path, "--max-slowdown", "3",
                        "--format", "json"});
    EXPECT_EQ(planned.exit_code, 0) << planned.output;
    const std::string plan_path = daemon_.dir.file("plan.json");
    std::ofstream(plan_path) << planned.output;
    auto plan = json::parse(planned.output);
    EXPECT_EQ(plan["jobs"][0]["lane_id"], plan["jobs"][1]["lane_id"]) << planned.output;
    EXPECT_EQ(plan["jobs"][0]["to_gpu"], plan["jobs"][1]["to_gpu"]) << planned.output;
    return plan_path;
  }

  DaemonUnderTest daemon_;
};

TEST_F(SharingDaemonTest, RunShareCapsTheJobAtItsLaneAndTheLaneIsReclaimedAtExit) {
  auto result = cli({"run", "--share", "--workflow", "capped", "--persistent", "1GiB",
                     "--ephemeral", "1GiB", "--", LANE_MEMBER, "dlsym", "meminfo", "alloc",
                     "1073741824", "alloc", "2147483648", "free", "alloc", "1073741824"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  // The job sees its lane (P + T + margin, rounded to 2 MiB), not the 16 GiB the stand-in has.
  EXPECT_NE(result.output.find("lane fs"), std::string::npos) << result.output;
  std::istringstream lines(result.output);
  std::string line;
  uint64_t total = 0;
  std::vector<std::string> allocs;
  while (std::getline(lines, line)) {
    if (line.rfind("meminfo ", 0) == 0) {
      std::istringstream fields(line.substr(8));
      uint64_t device = 0, free_bytes = 0;
      fields >> device >> free_bytes >> total;
    }
    if (line.rfind("alloc ", 0) == 0) allocs.push_back(line);
  }
  EXPECT_GE(total, 2ull * kGiB);
  EXPECT_LT(total, 3ull * kGiB);
  // 1 GiB fits; 2 GiB more does not (CUDA_ERROR_OUT_OF_MEMORY = 2); after a free it fits again.
  EXPECT_EQ(allocs, (std::vector<std::string>{"alloc 1073741824 0", "alloc 2147483648 2",
                                              "alloc 1073741824 0"}));
  auto status = share_status();
  EXPECT_TRUE(status["lanes"].empty()) << status.dump(2);
  auto kinds = event_kinds();
  EXPECT_EQ(kinds, (std::vector<std::string>{"job_admitted", "job_released"}));
}

TEST_F(SharingDaemonTest, GateSocketAndLaneDirectoryFollowTheConfig) {
  ASSERT_EQ(daemon_.stop(), 0);
  const auto ledgers = daemon_.dir.path() / "ledgers";
  std::filesystem::create_directory(ledgers);
  const std::string gate = daemon_.dir.file("turns.sock");
  // The keys win over FLEETSCOPE_LANE_DIR (which names the test's folder).
  daemon_.start(
      {"--gate-socket", gate, "--lane-directory", ledgers.string()},
      {"FLEETSCOPE_NVML_STANDIN_DEVICES=1", "FLEETSCOPE_LANE_DIR=" + daemon_.dir.path().string()});
  EXPECT_TRUE(socket_accepts(gate));
  EXPECT_FALSE(std::filesystem::exists(daemon_.dir.file("gate.sock")));
  EXPECT_EQ(share_status()["gate_socket"], gate);
  auto job = start_cli({"run", "--share", "--workflow", "w", "--persistent", "1GiB", "--ephemeral",
                        "1GiB", "--", LANE_MEMBER, "dlsym", "sleep", "1000", "meminfo"});
  // While the job runs its lane's ledger is in the configured folder.
  bool ledger_seen = false;
  for (int i = 0; i < 200 && !ledger_seen; ++i) {
    ledger_seen = !std::filesystem::is_empty(ledgers);
    if (!ledger_seen) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(ledger_seen);
  auto result = finish(*job);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("lane fs"), std::string::npos) << result.output;
}

TEST_F(SharingDaemonTest, AJobThatDoesNotFitWaitsUntilTheLaneFrees) {
  auto first = start_cli({"run", "--share", "--workflow", "big", "--persistent", "60GiB",
                          "--ephemeral", "10GiB", "--", LANE_MEMBER, "dlsym", "alloc", "1073741824",
                          "sleep", "1500", "meminfo"});
  // Wait until the first job holds its lane and its 1 GiB: the daemon reads the lane's ledger.
  json lane;
  for (int i = 0; i < 300 && lane.is_null(); ++i) {
    const json status = share_status();
    if (!status["lanes"].empty() && status["lanes"][0].value("used_bytes", int64_t{0}) == kGiB)
      lane = status["lanes"][0];
    else
      std::this_thread::sleep_for(10ms);
  }
  ASSERT_FALSE(lane.is_null()) << share_status().dump(2);
  EXPECT_EQ(lane["peak_used_bytes"], kGiB);
  auto second = start_cli({"run", "--share", "--workflow", "big2", "--persistent", "60GiB",
                           "--ephemeral", "10GiB", "--", LANE_MEMBER, "dlsym", "meminfo"});
  auto queued = second->wait_line("fleetscope run: queued for a lane", 10s);
  ASSERT_TRUE(queued) << "the second job was not queued";
  // It runs once the first has ended and its lane is reclaimed.
  auto first_result = finish(*first);
  EXPECT_EQ(first_result.exit_code, 0) << first_result.output;
  auto second_result = finish(*second);
  EXPECT_EQ(second_result.exit_code, 0) << second_result.output;
  EXPECT_NE(second_result.output.find("meminfo 0"), std::string::npos) << second_result.output;
  auto kinds = event_kinds();
  EXPECT_EQ(kinds, (std::vector<std::string>{"job_admitted", "job_queued", "job_released",
                                             "job_admitted", "job_released"}));
}

TEST_F(SharingDaemonTest, NoDaemonMeansTheJobRunsUnsharedWithAClearMessage) {
  EXPECT_EQ(daemon_.stop(), 0);
  auto result = cli({"run", "--share", "--persistent", "1GiB", "--ephemeral", "1GiB", "--",
                     LANE_MEMBER, "dlsym", "meminfo"});
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("running unshared"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("meminfo 0 17179869184 17179869184"), std::string::npos)
      << "the stand-in's own 16 GiB, uncapped:\n"
      << result.output;
}

TEST_F(SharingDaemonTest, AppliedPlanPlacesRestartedJobsOfItsWorkflowsAndRecordsIt) {
  const std::string plan = make_plan();
  auto applied = cli({"share", "apply", plan, "--format", "json"});
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  auto answer = json::parse(applied.output);
  const int64_t plan_id = answer["plan_id"];
  EXPECT_EQ(answer["workflows"], json({"wa", "wb"}));
  // A job of wa starts, ends, and restarts: both times in the plan's lane (P + T from the plan).
  for (int run = 0; run < 2; ++run) {
    auto result = cli(
        {"run", "--share-if-planned", "--workflow", "wa", "--", LANE_MEMBER, "dlsym", "meminfo"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find("plan " + std::to_string(plan_id)), std::string::npos)
        << result.output;
    EXPECT_EQ(result.output.find("meminfo 0 17179869184"), std::string::npos) << result.output;
  }
  // A workflow the plan does not name runs unshared.
  auto other =
      cli({"run", "--share-if-planned", "--workflow", "wc", "--", LANE_MEMBER, "dlsym", "meminfo"});
  EXPECT_EQ(other.exit_code, 0);
  EXPECT_NE(other.output.find("no active plan names workflow 'wc'"), std::string::npos)
      << other.output;
  auto status = share_status();
  ASSERT_EQ(status["plans"].size(), 1u);
  EXPECT_TRUE(status["plans"][0]["active"]);
  EXPECT_EQ(event_kinds(),
            (std::vector<std::string>{"plan_applied", "job_admitted", "job_released",
                                      "job_admitted", "job_released", "job_unshared"}));
  for (const auto& e : status["events"])
    if (e["kind"] == "job_admitted") {
      EXPECT_EQ(e["plan_id"], plan_id);
    }
  // Sharing off: new jobs unshared.
  ASSERT_EQ(cli({"share", "off"}).exit_code, 0);
  auto after_off =
      cli({"run", "--share-if-planned", "--workflow", "wa", "--", LANE_MEMBER, "dlsym", "meminfo"});
  EXPECT_NE(after_off.output.find("sharing is off"), std::string::npos) << after_off.output;
  EXPECT_FALSE(share_status()["plans"][0]["active"]);
}

TEST_F(SharingDaemonTest, AnAppliedPlanAndAutomaticModeSurviveADaemonRestart) {
  const std::string plan = make_plan();
  auto applied =
      cli({"share", "apply", plan, "--auto", "--max-slowdown", "2.5", "--format", "json"});
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  const int64_t plan_id = json::parse(applied.output)["plan_id"];
  ASSERT_EQ(daemon_.stop(), 0);
  start_daemon();
  // A job of a planned workflow started after the restart still gets the plan's lane.
  auto result =
      cli({"run", "--share-if-planned", "--workflow", "wb", "--", LANE_MEMBER, "dlsym", "meminfo"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("plan " + std::to_string(plan_id)), std::string::npos)
      << result.output;
  EXPECT_EQ(result.output.find("meminfo 0 17179869184"), std::string::npos) << result.output;
  const json status = share_status();
  EXPECT_TRUE(status["automatic"]) << status.dump(2);
  EXPECT_DOUBLE_EQ(status["max_slowdown"].get<double>(), 2.5) << status.dump(2);
  ASSERT_EQ(status["plans"].size(), 1u) << status.dump(2);
  EXPECT_TRUE(status["plans"][0]["active"]);
  EXPECT_EQ(status["plans"][0]["plan_id"], plan_id);
  EXPECT_EQ(event_kinds(), (std::vector<std::string>{"plan_applied", "plan_restored",
                                                     "job_admitted", "job_released"}));
  // Switched off, the plan stays off across the next restart.
  ASSERT_EQ(cli({"share", "off"}).exit_code, 0);
  ASSERT_EQ(daemon_.stop(), 0);
  start_daemon();
  auto after_off =
      cli({"run", "--share-if-planned", "--workflow", "wa", "--", LANE_MEMBER, "dlsym", "meminfo"});
  EXPECT_NE(after_off.output.find("sharing is off"), std::string::npos) << after_off.output;
}

TEST_F(SharingDaemonTest, AutomaticModeWithdrawsAPlanWhoseJobsSlowDownTooMuch) {
  const std::string plan = make_plan();
  ASSERT_EQ(cli({"share", "apply", plan, "--auto", "--max-slowdown", "1.5"}).exit_code, 0);
  // Both planned jobs start together in the one lane: 10 ms iterations alone, about 20 ms each
  // when they take turns, a measured slowdown near 2 > 1.5.
  auto a = start_cli({"run", "--share-if-planned", "--workflow", "wa", "--", LANE_MEMBER, "dlsym",
                      "steps", "60", "10000", "a"});
  auto b = start_cli({"run", "--share-if-planned", "--workflow", "wb", "--", LANE_MEMBER, "dlsym",
                      "steps", "60", "10000", "b"});
  auto ra = finish(*a), rb = finish(*b);
  ASSERT_EQ(ra.exit_code, 0) << ra.output;
  ASSERT_EQ(rb.exit_code, 0) << rb.output;
  EXPECT_NE(ra.output.find("turn a 59"), std::string::npos);
  // The daemon checks every 200 ms; give it a moment after the jobs ended.
  json withdrawn;
  for (int i = 0; i < 100 && withdrawn.is_null(); ++i) {
    const json status = share_status();
    for (const auto& e : status["events"])
      if (e["kind"] == "plan_withdrawn") withdrawn = e;
    if (withdrawn.is_null()) std::this_thread::sleep_for(50ms);
  }
  ASSERT_FALSE(withdrawn.is_null()) << share_status().dump(2);
  EXPECT_GT(withdrawn["detail"]["measured_slowdown"].get<double>(), 1.5);
  EXPECT_EQ(withdrawn["detail"]["solo_iteration_ns"], 10'000'000);
  // The next start of a job of the withdrawn plan runs alone.
  auto restarted =
      cli({"run", "--share-if-planned", "--workflow", "wa", "--", LANE_MEMBER, "dlsym", "meminfo"});
  EXPECT_NE(restarted.output.find("withdrawn"), std::string::npos) << restarted.output;
  EXPECT_NE(restarted.output.find("meminfo 0 17179869184 17179869184"), std::string::npos)
      << restarted.output;
  EXPECT_FALSE(share_status()["plans"][0]["active"]);
}

TEST_F(SharingDaemonTest, AutomaticModeKeepsAPlanWithinItsBound) {
  const std::string plan = make_plan();
  ASSERT_EQ(cli({"share", "apply", plan, "--auto", "--max-slowdown", "4"}).exit_code, 0);
  auto a = start_cli({"run", "--share-if-planned", "--workflow", "wa", "--", LANE_MEMBER, "dlsym",
                      "steps", "30", "10000", "a"});
  auto b = start_cli({"run", "--share-if-planned", "--workflow", "wb", "--", LANE_MEMBER, "dlsym",
                      "steps", "30", "10000", "b"});
  ASSERT_EQ(finish(*a).exit_code, 0);
  ASSERT_EQ(finish(*b).exit_code, 0);
  std::this_thread::sleep_for(400ms);  // two of the daemon's checks
  auto status = share_status();
  EXPECT_TRUE(status["plans"][0]["active"]) << status.dump(2);
  // The released jobs carry their measured slowdown in sharing_events.
  int measured = 0;
  for (const auto& e : status["events"])
    if (e["kind"] == "job_released" && e["detail"].contains("measured_slowdown")) {
      ++measured;
      EXPECT_GT(e["detail"]["measured_slowdown"].get<double>(), 1.0);
      EXPECT_LT(e["detail"]["measured_slowdown"].get<double>(), 4.0);
    }
  EXPECT_EQ(measured, 2) << status.dump(2);
}

}  // namespace
}  // namespace fleetscope::test_support
