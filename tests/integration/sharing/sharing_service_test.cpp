// The sharing service in real processes: fleetscoped hosts the lane allocator and the iteration
// gate; `fleetscope run --share` asks it for a lane and starts lane_member (a stand-in job that
// reaches the stand-in libcuda.so.1) with the interposition library; plans come from `fleetscope
// share plan` and are applied with `fleetscope share apply`.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "fleetscope/store/database.h"
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
    // One stand-in GPU of 80 GiB whose compute processes (pid, memory) the test writes into
    // nvml-processes; lane ledgers in the test's folder; one workflow_metrics window a second.
    daemon_.start({"--metrics-window-s", "1"},
                  {"FLEETSCOPE_NVML_STANDIN_DEVICES=1",
                   "FLEETSCOPE_NVML_STANDIN_PROCESSES_FILE=" + daemon_.dir.file("nvml-processes"),
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
  // `extra`: more share plan flags (--policy P).
  std::string make_plan(const std::vector<std::string>& extra = {}) const {
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
    std::vector<std::string> args{"share",          "plan", "--candidates", candidates_path,
                                  "--max-slowdown", "3",    "--format",     "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto planned = cli(args);
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
  auto result = cli({"run",   "--share",     "--workflow", "capped", "--persistent",
                     "1GiB",  "--ephemeral", "1GiB",       "--",     LANE_MEMBER,
                     "dlsym", "meminfo",     "nvml",       "alloc",  "1073741824",
                     "alloc", "2147483648",  "free",       "alloc",  "1073741824"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  // The job sees its lane (P + T + margin, rounded to 2 MiB), not the 16 GiB the stand-in has.
  EXPECT_NE(result.output.find("lane fs"), std::string::npos) << result.output;
  std::istringstream lines(result.output);
  std::string line;
  uint64_t total = 0, nvml_total = 0;
  int nvml_rc = -1;
  std::vector<std::string> allocs;
  while (std::getline(lines, line)) {
    if (line.rfind("nvml ", 0) == 0) {
      std::istringstream fields(line.substr(5));
      uint64_t free_bytes = 0;
      fields >> nvml_rc >> free_bytes >> nvml_total;
    }
    if (line.rfind("meminfo ", 0) == 0) {
      std::istringstream fields(line.substr(8));
      uint64_t device = 0, free_bytes = 0;
      fields >> device >> free_bytes >> total;
    }
    if (line.rfind("alloc ", 0) == 0) allocs.push_back(line);
  }
  EXPECT_GE(total, 2ull * kGiB);
  EXPECT_LT(total, 3ull * kGiB);
  // The job's NVML names the lane's GPU as the daemon's NVML does (tests/support/stand_in_gpu.h),
  // so NVML shows the lane too.
  EXPECT_EQ(nvml_rc, 0) << result.output;
  EXPECT_EQ(nvml_total, total) << result.output;
  // 1 GiB fits; 2 GiB more does not (CUDA_ERROR_OUT_OF_MEMORY = 2); after a free it fits again.
  EXPECT_EQ(allocs, (std::vector<std::string>{"alloc 1073741824 0", "alloc 2147483648 2",
                                              "alloc 1073741824 0"}));
  auto status = share_status();
  EXPECT_TRUE(status["lanes"].empty()) << status.dump(2);
  auto kinds = event_kinds();
  EXPECT_EQ(kinds, (std::vector<std::string>{"job_admitted", "job_released"}));
}

// Enforcement an operator can see: a lane's out-of-memory refusals are counted per job (share
// status, sharing_events); a process that names a granted lane without its grant token gets no
// memory from it; a ledger a job made for itself is listed as stray and removed.
TEST_F(SharingDaemonTest, LaneGrantsDenialsAndStrayLedgersAreVisibleAndEnforced) {
  auto job = start_cli({"run", "--share", "--workflow", "capped", "--persistent", "1GiB",
                        "--ephemeral", "1GiB", "--", LANE_MEMBER, "dlsym", "alloc", "1073741824",
                        "alloc", "2147483648", "ready", "sleep", "3000"});
  ASSERT_TRUE(job->wait_line("ready", 20s));
  // The daemon reads the ledgers each period: wait for the job's denial to show.
  json status, lane;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    status = share_status();
    if (!status["lanes"].empty() && status["lanes"][0].value("denied_allocations", 0) == 1) {
      lane = status["lanes"][0];
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_FALSE(lane.is_null()) << status.dump(2);
  ASSERT_EQ(lane["jobs"].size(), 1u);
  EXPECT_EQ(lane["jobs"][0]["denied_allocations"], 1);
  bool denial_event = false;
  for (const auto& e : status["events"])
    if (e["kind"] == "lane_denials" && e["detail"]["workflow"] == "capped" &&
        e["detail"]["denied_allocations"] == 1)
      denial_event = true;
  EXPECT_TRUE(denial_event) << status.dump(2);
  auto table = cli({"share", "status"});
  EXPECT_NE(table.output.find("1 allocation(s) refused (lane full)"), std::string::npos)
      << table.output;

  // An intruder names the granted lane (and a bigger size) without the grant token.
  const std::string lane_id = lane["lane_id"];
  auto member = [&](const std::string& id, const std::string& token = {}) {
    std::vector<std::string> env{"LD_PRELOAD=" LANES_LIBRARY,
                                 "LD_LIBRARY_PATH=" STAND_IN_DIR,
                                 "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0",
                                 "FLEETSCOPE_LANE_ID=" + id,
                                 "FLEETSCOPE_LANE_BYTES=64GiB",
                                 "FLEETSCOPE_LANE_DIR=" + daemon_.dir.path().string()};
    if (!token.empty()) env.push_back("FLEETSCOPE_LANE_TOKEN=" + token);
    Child intruder({LANE_MEMBER, "dlsym", "alloc", "1073741824"}, env);
    ProgramResult result;
    while (auto line = intruder.wait_line("", 20s)) result.output += *line + "\n";
    intruder.wait_exit(20s);
    return result.output;
  };
  const std::string refused = member(lane_id);
  EXPECT_NE(refused.find("asked for without a grant (FLEETSCOPE_LANE_TOKEN unset)"),
            std::string::npos)
      << refused;
  EXPECT_EQ(refused.find("alloc 1073741824 0"), std::string::npos) << refused;
  const std::string guessed = member(lane_id, "0123456789abcdef0123456789abcdef");
  EXPECT_NE(guessed.find("was granted by fleetscoped to other jobs (FLEETSCOPE_LANE_TOKEN does "
                         "not match)"),
            std::string::npos)
      << guessed;
  EXPECT_EQ(guessed.find("alloc 1073741824 0"), std::string::npos) << guessed;
  // A lane of its own, without a grant: refused too, and no ledger is made.
  const std::string own = member("my-own-lane");
  EXPECT_NE(own.find("lane 'my-own-lane' asked for without a grant (FLEETSCOPE_LANE_TOKEN unset): "
                     "only fleetscoped grants lanes"),
            std::string::npos)
      << own;
  EXPECT_EQ(own.find("alloc 1073741824 0"), std::string::npos) << own;
  EXPECT_FALSE(std::filesystem::exists(daemon_.dir.file("fleetscope-lane-my-own-lane")));
  // A ledger no lane of this daemon owns (an earlier run's, left after a crash) is listed as
  // stray and removed on request.
  const std::string stray = daemon_.dir.file("fleetscope-lane-an-earlier-run");
  std::filesystem::copy_file(daemon_.dir.file("fleetscope-lane-" + lane_id), stray);
  EXPECT_EQ(share_status()["stray_ledgers"], json::array({stray}));
  auto removed = cli({"share", "ledgers", "--remove"});
  EXPECT_EQ(removed.exit_code, 0) << removed.output;
  EXPECT_NE(removed.output.find("removed " + stray), std::string::npos) << removed.output;
  EXPECT_FALSE(std::filesystem::exists(stray));
  EXPECT_EQ(share_status()["stray_ledgers"], json::array());
  EXPECT_EQ(finish(*job).exit_code, 0);
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
  // The daemon starts the gate after the API and agent sockets that start() waits for: wait for
  // the gate to accept, with a deadline.
  ASSERT_TRUE(eventually([&] { return socket_accepts(gate); }))
      << gate << " did not accept within the deadline";
  EXPECT_FALSE(std::filesystem::exists(daemon_.dir.file("gate.sock")));
  EXPECT_EQ(share_status()["gate_socket"], gate);
  auto job = start_cli({"run", "--share", "--workflow", "w", "--persistent", "1GiB", "--ephemeral",
                        "1GiB", "--", LANE_MEMBER, "dlsym", "sleep", "1000", "meminfo"});
  // While the job runs its lane's ledger is in the configured folder.
  EXPECT_TRUE(eventually([&] { return !std::filesystem::is_empty(ledgers); }))
      << "no lane ledger appeared in " << ledgers;
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

// A plan is applied with the turn policy it was made for (share plan --policy): share apply takes
// it from the plan and refuses another, before anything reaches the daemon.
TEST_F(SharingDaemonTest, APlanIsAppliedWithTheTurnPolicyItWasMadeFor) {
  const std::string plan = make_plan({"--policy", "priority"});
  EXPECT_EQ(json::parse(std::ifstream(plan))["turn_policy"], "priority");
  auto refused = cli({"share", "apply", plan, "--policy", "fifo"});
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("was planned for turn policy priority"), std::string::npos)
      << refused.output;
  EXPECT_TRUE(share_status()["plans"].empty());
  auto applied = cli({"share", "apply", plan, "--format", "json"});
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  auto status = share_status();
  ASSERT_EQ(status["plans"].size(), 1u) << status.dump(2);
  EXPECT_EQ(status["plans"][0]["policy"], "priority") << status.dump(2);
  // The same policy named again is accepted.
  EXPECT_EQ(cli({"share", "apply", plan, "--policy", "priority"}).exit_code, 0);
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

// A planned job that never waits for a turn (alone in its lane, as beside other lanes on the GPU)
// is timed too: from its lane ledger's step counter, not the gate. Too slow: the plan goes, and
// the event carries every job's figures.
TEST_F(SharingDaemonTest, AutomaticModeTimesAJobThatNeverWaitsForATurn) {
  const std::string plan = make_plan();
  ASSERT_EQ(cli({"share", "apply", plan, "--auto", "--max-slowdown", "1.5"}).exit_code, 0);
  // 25 ms iterations against the plan's 10 ms alone: 2.5 > 1.5, with no lane mate to wait for.
  auto a = start_cli({"run", "--share-if-planned", "--workflow", "wa", "--", LANE_MEMBER, "dlsym",
                      "steps", "40", "25000", "a"});
  json withdrawn;
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (withdrawn.is_null() && std::chrono::steady_clock::now() < deadline) {
    const json status = share_status();
    for (const auto& e : status["events"])
      if (e["kind"] == "plan_withdrawn") withdrawn = e;
    if (withdrawn.is_null()) std::this_thread::sleep_for(20ms);
  }
  auto ra = finish(*a);
  ASSERT_EQ(ra.exit_code, 0) << ra.output;
  ASSERT_FALSE(withdrawn.is_null()) << share_status().dump(2);
  EXPECT_EQ(withdrawn["detail"]["workflow"], "wa");
  EXPECT_GT(withdrawn["detail"]["measured_slowdown"].get<double>(), 2.0);
  EXPECT_LT(withdrawn["detail"]["measured_slowdown"].get<double>(), 4.0);
  ASSERT_EQ(withdrawn["detail"]["jobs"].size(), 1u) << withdrawn.dump(2);
  EXPECT_EQ(withdrawn["detail"]["jobs"][0]["workflow"], "wa");
  EXPECT_EQ(withdrawn["detail"]["jobs"][0]["solo_iteration_ns"], 10'000'000);
  EXPECT_GE(withdrawn["detail"]["jobs"][0]["iterations"].get<int>(), 3);
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
  // Until both released jobs carry their measured slowdown (the daemon's checks run each period).
  nlohmann::json status;
  auto measured_events = [&] {
    status = share_status();
    int count = 0;
    for (const auto& e : status["events"])
      if (e["kind"] == "job_released" && e["detail"].contains("measured_slowdown")) ++count;
    return count;
  };
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (measured_events() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
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

// The loop on a live host, stand-ins only: two jobs with the agent, each keeping the GPU 20 %
// busy at 10 ms per iteration and holding 4 GB (the stand-in NVML's per-process figure), one
// trace each, `analyze HOST.db` on the database the daemon holds (findings stored), `share plan
// HOST.db` from the live data the daemon wrote (P + T from its NVML figures: the windows saw no
// memory events) -> both in one lane of one GPU, applied in automatic mode, the jobs restarted
// into it with `run --share-if-planned`, one slowed down -> the plan is withdrawn with the event;
// then the daemon killed with -9 mid-window -> after the restart the capture is closed, noted and
// analyzed.
TEST_F(SharingDaemonTest, TheLiveLoopFromTraceToWithdrawalAndACrashMidWindow) {
  auto job = [&](const std::string& workflow, bool stepped) {
    std::vector<std::string> argv{TEST_AGENT, "--socket", daemon_.agent_socket, "--kernels", "500"};
    if (stepped) argv.insert(argv.end(), {"--step-us", "10000", "--busy-us", "2000"});
    return std::make_unique<Child>(argv,
                                   std::vector<std::string>{"FLEETSCOPE_WORKFLOW=" + workflow});
  };
  auto ja = job("wa", true), jb = job("wb", true);
  ASSERT_TRUE(ja->wait_line("registered", 10s));
  ASSERT_TRUE(jb->wait_line("registered", 10s));
  // What NVML reports for the two running jobs: 4 GB each on GPU 0, allocated before any window.
  std::ofstream(daemon_.dir.file("nvml-processes"))
      << "0:" << ja->pid() << ":4000000000:20,0:" << jb->pid() << ":4000000000:20";
  for (Child* j : {ja.get(), jb.get()}) {
    auto traced = cli({"trace", "--pid", std::to_string(j->pid()), "--duration-ms", "50"});
    ASSERT_EQ(traced.exit_code, 0) << traced.output;
    EXPECT_NE(traced.output.find("kernels:         500"), std::string::npos) << traced.output;
  }
  for (const char* capture : {"1", "2"}) {
    auto analyzed = cli({"analyze", daemon_.database, "--capture", capture});
    ASSERT_EQ(analyzed.exit_code, 0) << analyzed.output;
    std::smatch count;
    ASSERT_TRUE(std::regex_search(
        analyzed.output, count, std::regex("analyze: capture [0-9]+ of [^\\n]*: ([0-9]+) finding")))
        << analyzed.output;
    auto db = store::Database::open(daemon_.database);
    auto stored =
        db.prepare("SELECT count(*) FROM findings WHERE captureId = " + std::string(capture));
    ASSERT_TRUE(stored.step());
    EXPECT_EQ(stored.column_int(0), std::stoll(count[1]));
  }
  // The daemon's NVML figures of both workflows reach workflow_metrics (a window a second).
  auto nvml_workflows = [&] {
    auto db = store::Database::open(daemon_.database);
    auto st = db.prepare(
        "SELECT count(DISTINCT workflow_id) FROM workflow_metrics "
        "WHERE metric = 'memory_peak_bytes' AND value >= 4000000000");
    return st.step() ? st.column_int(0) : 0;
  };
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (nvml_workflows() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(50ms);
  ASSERT_EQ(nvml_workflows(), 2);
  ja.reset();  // the jobs end, to be restarted into the plan
  jb.reset();

  // The plan from the host database the daemon wrote.
  auto planned =
      cli({"share", "plan", daemon_.database, "--max-slowdown", "3", "--format", "json"});
  ASSERT_EQ(planned.exit_code, 0) << planned.output;
  const json plan = json::parse(planned.output);
  ASSERT_EQ(plan["jobs"].size(), 2u) << planned.output;
  EXPECT_EQ(plan["jobs"][0]["lane_id"], plan["jobs"][1]["lane_id"]) << planned.output;
  EXPECT_EQ(plan["jobs"][0]["to_gpu"], plan["jobs"][1]["to_gpu"]) << planned.output;
  EXPECT_EQ(plan["gpus_after"], 1) << planned.output;
  std::set<std::string> workflows;
  for (const auto& j : plan["jobs"]) {
    workflows.insert(j["workflow"].get<std::string>());
    EXPECT_EQ(j["memory_evidence"].get<std::string>().rfind("nvml: ", 0), 0u) << j;
    EXPECT_EQ(j["solo_iteration_ns"], 10'000'000) << j;
    // NVML's 4 GB less the CUDA context the memory model charges outside the lane.
    EXPECT_EQ(j["persistent_bytes"], 4'000'000'000 - 300 * (int64_t{1} << 20)) << j;
  }
  EXPECT_EQ(workflows, (std::set<std::string>{"wa", "wb"}));
  const std::string plan_path = daemon_.dir.file("plan.json");
  std::ofstream(plan_path) << planned.output;

  ASSERT_EQ(cli({"share", "apply", plan_path, "--auto", "--max-slowdown", "1.5"}).exit_code, 0);
  // wb is slowed down (40 ms iterations against 10 ms alone): the plan must go.
  auto a = start_cli({"run", "--share-if-planned", "--workflow", "wa", "--", LANE_MEMBER, "dlsym",
                      "steps", "30", "10000", "a"});
  auto b = start_cli({"run", "--share-if-planned", "--workflow", "wb", "--", LANE_MEMBER, "dlsym",
                      "steps", "30", "40000", "b"});
  auto ra = finish(*a), rb = finish(*b);
  ASSERT_EQ(ra.exit_code, 0) << ra.output;
  ASSERT_EQ(rb.exit_code, 0) << rb.output;
  EXPECT_NE(ra.output.find("lane fs"), std::string::npos) << ra.output;
  json withdrawn;
  deadline = std::chrono::steady_clock::now() + 10s;
  while (withdrawn.is_null() && std::chrono::steady_clock::now() < deadline) {
    const json status = share_status();
    for (const auto& e : status["events"])
      if (e["kind"] == "plan_withdrawn") withdrawn = e;
    if (withdrawn.is_null()) std::this_thread::sleep_for(20ms);
  }
  ASSERT_FALSE(withdrawn.is_null()) << share_status().dump(2);
  EXPECT_GT(withdrawn["detail"]["measured_slowdown"].get<double>(), 1.5);
  EXPECT_FALSE(share_status()["plans"][0]["active"]);

  // kill -9 of the daemon mid-window.
  auto jc = job("wc", false);
  ASSERT_TRUE(jc->wait_line("registered", 10s));
  auto open = cli({"trace", "--pid", std::to_string(jc->pid()), "--duration-ms", "30000",
                   "--no-wait", "--format", "json"});
  ASSERT_EQ(open.exit_code, 0) << open.output;
  const int64_t capture = json::parse(open.output.substr(open.output.find('{')))["capture_id"];
  {
    ApiClient api(daemon_.api_socket);
    rpc::TraceProgress progress;
    deadline = std::chrono::steady_clock::now() + 10s;
    do {
      api->traceProgress(progress, capture, 100);
    } while (progress.records < 500 && std::chrono::steady_clock::now() < deadline);
    ASSERT_EQ(progress.records, 500);
  }
  daemon_.process->signal(SIGKILL);
  ASSERT_TRUE(daemon_.process->wait_exit(10s));
  start_daemon();
  ApiClient api(daemon_.api_socket);
  rpc::TraceProgress after;
  api->traceProgress(after, capture, 20'000);
  ASSERT_TRUE(after.done);
  EXPECT_NE(after.note.find("interrupted: fleetscoped stopped (signal/crash)"), std::string::npos)
      << after.note;
  EXPECT_EQ(after.kernels, 500);
}

}  // namespace
}  // namespace fleetscope::test_support
