// fleetscoped with the real agent (libfleetscope_agent.so, loaded through its injection entry
// point by agent_job, against the stand-in CUPTI) in real processes over real Unix sockets.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <thread>

#include "fleetscope/store/database.h"
#include "harness.h"

namespace fleetscope::test_support {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<Child> start_job(const DaemonUnderTest& daemon, std::vector<std::string> args,
                                 const std::string& workflow = "e2e-job") {
  std::vector<std::string> argv = {AGENT_JOB, AGENT_SO, STAND_IN_CUPTI};
  argv.insert(argv.end(), args.begin(), args.end());
  return std::make_unique<Child>(
      argv, std::vector<std::string>{"FLEETSCOPE_CUPTI_PATH=" STAND_IN_CUPTI,
                                     "FLEETSCOPE_AGENT_SOCKET=" + daemon.agent_socket,
                                     "FLEETSCOPE_WORKFLOW=" + workflow,
                                     // small buffers: batches reach the daemon mid-window
                                     "FLEETSCOPE_BUFFER_SIZE_KB=64"});
}

// Waits until the daemon lists `count` agents.
bool wait_for_agents(const DaemonUnderTest& daemon, size_t count,
                     std::chrono::milliseconds timeout = 30s) {  // generous: loaded CI machines
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    ApiClient api(daemon.api_socket);
    rpc::DaemonStatus status;
    api->status(status);
    if (status.agents.size() == count) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

int64_t query_int(const std::string& database, const std::string& sql) {
  auto db = store::Database::open(database);
  auto s = db.prepare(sql);
  EXPECT_TRUE(s.step()) << sql;
  return s.column_int(0);
}

rpc::TraceProgress trace_pid(const DaemonUnderTest& daemon, int pid, std::optional<int> duration_ms,
                             std::optional<int> iterations = std::nullopt) {
  ApiClient api(daemon.api_socket);
  rpc::TraceRequest request;
  request.__set_pid(pid);
  if (duration_ms) request.__set_duration_ms(*duration_ms);
  if (iterations) request.__set_iterations(*iterations);
  rpc::TraceStarted started;
  api->startTrace(started, request);
  rpc::TraceProgress progress;
  api->traceProgress(progress, started.capture_id, 20'000);
  return progress;
}

TEST(AgentEndToEnd, TraceOfAProcessTreeLandsEveryWorkersKernels) {
  DaemonUnderTest daemon;
  daemon.start();
  auto job = start_job(daemon, {"--children", "2"});
  ASSERT_TRUE(wait_for_agents(daemon, 3)) << "the job's three processes did not register";
  auto progress = trace_pid(daemon, job->pid(), 300);
  ASSERT_TRUE(progress.done) << progress.note;
  EXPECT_EQ(progress.pids.size(), 3u);
  EXPECT_GT(progress.kernels, 0);
  EXPECT_FALSE(progress.__isset.note) << progress.note;
  const std::string capture = std::to_string(progress.capture_id);
  EXPECT_EQ(
      query_int(
          daemon.database,
          "SELECT count(DISTINCT globalPid) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE captureId = " +
              capture),
      3);
  EXPECT_EQ(
      query_int(daemon.database,
                "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE captureId = " + capture),
      progress.kernels);
  EXPECT_GT(
      query_int(daemon.database,
                "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE captureId = " + capture),
      0);
  // A second window in the same processes, by iterations this time.
  auto second = trace_pid(daemon, job->pid(), std::nullopt, 2);
  ASSERT_TRUE(second.done) << second.note;
  EXPECT_GT(second.kernels, 0);
  EXPECT_EQ(daemon.stop(), 0);
}

TEST(AgentEndToEnd, AgentsComeBackAfterTheDaemonRestarts) {
  DaemonUnderTest daemon;
  daemon.start();
  auto job = start_job(daemon, {});
  ASSERT_TRUE(wait_for_agents(daemon, 1));
  EXPECT_EQ(daemon.stop(), 0);
  daemon.start();
  ASSERT_TRUE(wait_for_agents(daemon, 1)) << "the agent did not register again";
  auto progress = trace_pid(daemon, job->pid(), 200);
  ASSERT_TRUE(progress.done) << progress.note;
  EXPECT_GT(progress.kernels, 0);
  EXPECT_EQ(daemon.stop(), 0);
}

TEST(AgentEndToEnd, KillMinus9MidWindowKeepsWhatWasCommitted) {
  DaemonUnderTest daemon;
  daemon.start();
  auto job = start_job(daemon, {});
  ASSERT_TRUE(wait_for_agents(daemon, 1));
  ApiClient api(daemon.api_socket);
  rpc::TraceRequest request;
  request.__set_pid(job->pid());
  request.__set_duration_ms(10'000);
  rpc::TraceStarted started;
  api->startTrace(started, request);
  rpc::TraceProgress progress;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  do {  // until some batches are committed
    api->traceProgress(progress, started.capture_id, 100);
  } while (progress.records == 0 && std::chrono::steady_clock::now() < deadline);
  ASSERT_GT(progress.records, 0) << "no batch arrived while the window was open";
  job->signal(SIGKILL);
  ASSERT_TRUE(job->wait_exit(5s));
  api->traceProgress(progress, started.capture_id, 10'000);
  ASSERT_TRUE(progress.done);
  EXPECT_NE(progress.note.find("went away mid-window"), std::string::npos) << progress.note;
  EXPECT_EQ(daemon.stop(), 0);
  const std::string capture = std::to_string(started.capture_id);
  int64_t stored =
      query_int(daemon.database,
                "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE captureId = " + capture) +
      query_int(daemon.database,
                "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE captureId = " + capture);
  EXPECT_GT(stored, 0);
  EXPECT_LE(stored, progress.records);
  auto db = store::Database::open(daemon.database);
  auto check = db.prepare("PRAGMA integrity_check");
  ASSERT_TRUE(check.step());
  EXPECT_EQ(check.column_text(0), "ok");
}

// kill -9 of the daemon mid-window: the agent ends that window by itself (nothing to tell the
// new daemon, no "capture N is not open" loop), the restarted daemon closes and notes the capture,
// and the next window of the same job works.
TEST(AgentEndToEnd, AgentEndsItsWindowWhenTheDaemonDiesAndTracesAgainAfterTheRestart) {
  DaemonUnderTest daemon;
  daemon.start();
  auto job = start_job(daemon, {});
  ASSERT_TRUE(wait_for_agents(daemon, 1));
  int64_t capture = 0;
  {
    ApiClient api(daemon.api_socket);
    rpc::TraceRequest request;
    request.__set_pid(job->pid());
    request.__set_duration_ms(60'000);
    rpc::TraceStarted started;
    api->startTrace(started, request);
    capture = started.capture_id;
    rpc::TraceProgress progress;
    auto deadline = std::chrono::steady_clock::now() + 10s;
    do {
      api->traceProgress(progress, capture, 100);
    } while (progress.records == 0 && std::chrono::steady_clock::now() < deadline);
    ASSERT_GT(progress.records, 0) << "no batch arrived while the window was open";
  }
  daemon.process->signal(SIGKILL);
  ASSERT_TRUE(daemon.process->wait_exit(10s));
  daemon.start();
  ASSERT_TRUE(wait_for_agents(daemon, 1)) << "the agent did not register again";
  ApiClient api(daemon.api_socket);
  rpc::TraceProgress old;
  api->traceProgress(old, capture, 20'000);
  ASSERT_TRUE(old.done);
  EXPECT_NE(old.note.find("interrupted: fleetscoped stopped"), std::string::npos) << old.note;
  // The agent is idle again: a new window opens (an agent still in the old one would refuse it).
  auto progress = trace_pid(daemon, job->pid(), 200);
  ASSERT_TRUE(progress.done) << progress.note;
  EXPECT_GT(progress.kernels, 0);
  EXPECT_FALSE(progress.__isset.note) << progress.note;
  EXPECT_EQ(daemon.stop(), 0);
}

TEST(AgentEndToEnd, AnotherCuptiUserInTheProcessIsAClearAnswer) {
  DaemonUnderTest daemon;
  daemon.start();
  auto job = start_job(daemon, {"--other-subscriber"});
  ASSERT_TRUE(wait_for_agents(daemon, 1));
  auto progress = trace_pid(daemon, job->pid(), 100);
  ASSERT_TRUE(progress.done);
  EXPECT_NE(progress.note.find("another-cupti-subscriber"), std::string::npos) << progress.note;
  EXPECT_EQ(progress.records, 0);
  EXPECT_EQ(daemon.stop(), 0);
}

TEST(AgentEndToEnd, JobWithoutADaemonRunsOnAndExitsCleanly) {
  DaemonUnderTest daemon;  // never started: the socket does not exist
  auto job = start_job(daemon, {"--lifetime-ms", "300"});
  ASSERT_TRUE(job->wait_line("ready", 10s));
  auto status = job->wait_exit(10s);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
}

}  // namespace
}  // namespace fleetscope::test_support
