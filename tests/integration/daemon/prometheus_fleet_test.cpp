// A real Prometheus server (Debian's `prometheus`, started on loopback) scrapes two daemons, and
// `fleetscope fleet --prometheus` over it ranks their workflows by wasted GPU-hours.
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <fstream>
#include <regex>
#include <thread>

#include "harness.h"

namespace fleetscope::test_support {
namespace {

using namespace std::chrono_literals;

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

std::string metrics_port(DaemonUnderTest& daemon) {
  auto line = daemon.process->wait_line("fleetscoped: Prometheus metrics on", 10s);
  std::smatch port;
  if (!line || !std::regex_search(*line, port, std::regex(R"(127\.0\.0\.1:(\d+)/metrics)")))
    return "";
  return port[1];
}

// `slurm_job`: the Slurm job the agent's environment names (its series get slurm_job_id).
std::unique_ptr<Child> start_agent(const std::string& socket, const std::string& workflow,
                                   const std::string& slurm_job) {
  return std::make_unique<Child>(
      std::vector<std::string>{TEST_AGENT, "--socket", socket},
      std::vector<std::string>{"FLEETSCOPE_WORKFLOW=" + workflow, "SLURM_JOB_ID=" + slurm_job});
}

TEST(PrometheusFleet, RanksWorkflowsOfTwoDaemonsByWastedGpuHours) {
  // `make test` installs it; a missing server fails the test rather than passing it unrun.
  ASSERT_EQ(access(PROMETHEUS, X_OK), 0)
      << PROMETHEUS
      << " is missing: `scripts/install-deps prometheus` (run by `make test`) installs it";
  // Host A: "idle-job" at 10 % SM. Host B: "busy-job" at 90 % and "half-job" at 50 %.
  DaemonUnderTest a, b;
  // Slurm job 80 runs on both hosts (idle-job on A, half-job on B); job 81 is busy-job.
  auto idle = start_agent(a.agent_socket, "idle-job", "80");
  auto busy = start_agent(b.agent_socket, "busy-job", "81");
  auto half = start_agent(b.agent_socket, "half-job", "80");
  a.start({"--prometheus-port", "0"},
          {"FLEETSCOPE_NVML_STANDIN_PROCESSES=0:" + std::to_string(idle->pid()) + ":1000:10"});
  b.start({"--prometheus-port", "0"},
          {"FLEETSCOPE_NVML_STANDIN_PROCESSES=0:" + std::to_string(busy->pid()) +
           ":1000:90,1:" + std::to_string(half->pid()) + ":1000:50"});
  std::string port_a = metrics_port(a), port_b = metrics_port(b);
  ASSERT_FALSE(port_a.empty());
  ASSERT_FALSE(port_b.empty());
  ASSERT_TRUE(idle->wait_line("registered", 10s) && busy->wait_line("registered", 10s) &&
              half->wait_line("registered", 10s));

  // One analyzed capture of idle-job on host A: CAPTURES and TOP FINDING come from it.
  rpc::TraceProgress traced;
  {
    ApiClient api(a.api_socket);
    rpc::TraceByName request;
    request.workflow = "idle-job";
    request.__set_duration_ms(50);
    rpc::TraceStarted started;
    api->startTraceOfWorkflow(started, request);
    api->traceProgress(traced, started.capture_id, 20'000);
    ASSERT_TRUE(traced.done) << traced.note;
  }

  TempDir prometheus_dir;
  std::ofstream(prometheus_dir.file("prometheus.yml"))
      << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
      << "scrape_configs:\n  - job_name: fleetscoped\n    static_configs:\n"
      << "      - targets: ['127.0.0.1:" << port_a << "', '127.0.0.1:" << port_b << "']\n";
  const std::string web = "127.0.0.1:" + std::to_string(free_port());
  Child prometheus({PROMETHEUS, "--config.file=" + prometheus_dir.file("prometheus.yml"),
                    "--storage.tsdb.path=" + prometheus_dir.file("data"),
                    "--web.listen-address=" + web});

  const std::string cli = FLEETSCOPE_CLI;
  ProgramResult ranking;
  auto deadline = std::chrono::steady_clock::now() + 25s;
  do {  // until Prometheus has scraped both daemons
    std::this_thread::sleep_for(500ms);
    ranking = run_program({cli, "fleet", "--prometheus", "http://" + web, "--format", "csv"});
  } while ((ranking.exit_code != 0 || ranking.output.find("half-job") == std::string::npos ||
            ranking.output.find("\nidle-job,,1,") == std::string::npos) &&
           std::chrono::steady_clock::now() < deadline);
  ASSERT_EQ(ranking.exit_code, 0) << ranking.output;
  // csv: header, then workflows by wasted GPU-hours: 90 % idle, 50 %, 10 %.
  auto idle_at = ranking.output.find("\nidle-job,"), half_at = ranking.output.find("\nhalf-job,"),
       busy_at = ranking.output.find("\nbusy-job,");
  ASSERT_NE(idle_at, std::string::npos) << ranking.output;
  ASSERT_NE(half_at, std::string::npos) << ranking.output;
  ASSERT_NE(busy_at, std::string::npos) << ranking.output;
  EXPECT_LT(idle_at, half_at) << ranking.output;
  EXPECT_LT(half_at, busy_at) << ranking.output;
  // The daemon's captures and findings: idle-job has its one capture (and, when the analyzer
  // found something in it, that finding's rule); the others none.
  const std::string idle_row =
      ranking.output.substr(idle_at + 1, ranking.output.find('\n', idle_at + 1) - idle_at - 1);
  EXPECT_EQ(idle_row.rfind("idle-job,,1,", 0), 0u) << ranking.output;
  if (traced.__isset.top_finding) {
    const std::string rule = traced.top_finding.substr(0, traced.top_finding.find(':'));
    EXPECT_EQ(idle_row.substr(idle_row.rfind(',') + 1), rule) << ranking.output;
  }
  EXPECT_NE(ranking.output.find("\nbusy-job,,0,"), std::string::npos) << ranking.output;
  auto table = run_program({cli, "fleet", "--prometheus", "http://" + web});
  EXPECT_NE(table.output.find("WASTED GPU-H"), std::string::npos)
      << table.output;  // the same table as FILES...
  // By Slurm job across the two hosts: job 80 (idle-job 90 % idle + half-job 50 %) before 81
  // (busy-job 10 %), on 2 GPUs, with idle-job's capture.
  auto by_job = run_program(
      {cli, "fleet", "--prometheus", "http://" + web, "--by", "slurm_job_id", "--format", "csv"});
  ASSERT_EQ(by_job.exit_code, 0) << by_job.output;
  EXPECT_EQ(by_job.output.rfind("slurm_job_id,user,captures,devices,", 0), 0u) << by_job.output;
  const auto job80 = by_job.output.find("\n80,,1,2,"), job81 = by_job.output.find("\n81,,0,1,");
  EXPECT_NE(job80, std::string::npos) << by_job.output;
  EXPECT_NE(job81, std::string::npos) << by_job.output;
  EXPECT_LT(job80, job81) << by_job.output;
  EXPECT_EQ(
      run_program({cli, "fleet", "--prometheus", "http://" + web, "--by", "job id"}).exit_code, 2);
  // A range that is no PromQL duration is a usage error before Prometheus is asked (it went into
  // the query text as given).
  auto bad =
      run_program({cli, "fleet", "--prometheus", "http://" + web, "--range", "not-a-duration"});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--range expects a Prometheus duration"), std::string::npos)
      << bad.output;
  prometheus.signal(SIGTERM);
  prometheus.wait_exit(10s);
  EXPECT_EQ(a.stop(), 0);
  EXPECT_EQ(b.stop(), 0);
}

}  // namespace
}  // namespace fleetscope::test_support
