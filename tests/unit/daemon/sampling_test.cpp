// NVML through the real dlopen path against the stand-in libnvidia-ml, the per-workflow
// aggregates, and their Prometheus exposition.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include "fleetscope/daemon/nvml_sampler.h"
#include "fleetscope/daemon/prometheus.h"
#include "fleetscope/daemon/workflow_metrics.h"

namespace fleetscope::daemon {
namespace {

struct ScopedEnv {
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { unsetenv(name_); }
  const char* name_;
};

TEST(NvmlSampler, ReadsDevicesAndProcessesThroughDlopen) {
  ScopedEnv devices("FLEETSCOPE_NVML_STANDIN_DEVICES", "3");
  ScopedEnv processes("FLEETSCOPE_NVML_STANDIN_PROCESSES",
                      "0:111:1000:30,0:222:500:25,2:333:42:90");
  NvmlSampler sampler(NVML_STANDIN);
  ASSERT_TRUE(sampler.available()) << sampler.note();
  EXPECT_EQ(sampler.device_count(), 3);
  auto readings = sampler.sample();
  ASSERT_EQ(readings.size(), 3u);
  EXPECT_EQ(readings[1].name, "Stand-in GPU 1");
  EXPECT_EQ(readings[1].uuid, "GPU-5eed0000-0000-0000-0000-000000000001");
  EXPECT_EQ(readings[1].gpu_utilization_pct, 50.0);
  EXPECT_EQ(readings[1].power_watts, 260.0);  // 260000 mW
  EXPECT_EQ(readings[1].sm_clock_mhz, 1410);
  EXPECT_EQ(readings[1].memory_clock_mhz, 1593);
  EXPECT_EQ(readings[0].memory_used_bytes, 1500);
  EXPECT_EQ(readings[0].memory_total_bytes, int64_t{80} << 30);
  ASSERT_EQ(readings[0].processes.size(), 2u);
  EXPECT_EQ(readings[0].processes[0].pid, 111);
  EXPECT_EQ(readings[0].processes[0].memory_used_bytes, 1000);
  EXPECT_EQ(readings[0].processes[0].sm_utilization_pct, 30.0);
  EXPECT_TRUE(readings[1].processes.empty());
  ASSERT_EQ(readings[2].processes.size(), 1u);
  // A second sample only takes newer per-process samples, and still has them.
  auto again = sampler.sample();
  EXPECT_EQ(again[2].processes[0].sm_utilization_pct, 90.0);
}

TEST(NvmlSampler, NoDriverOrFailingInitTurnsSamplingOffWithAReason) {
  NvmlSampler missing("/nonexistent/libnvidia-ml.so.1");
  EXPECT_FALSE(missing.available());
  EXPECT_NE(missing.note().find("cannot load /nonexistent/libnvidia-ml.so.1"), std::string::npos)
      << missing.note();
  EXPECT_TRUE(missing.sample().empty());
  ScopedEnv fail("FLEETSCOPE_NVML_STANDIN_FAIL_INIT", "1");
  NvmlSampler failing(NVML_STANDIN);
  EXPECT_FALSE(failing.available());
  EXPECT_NE(failing.note().find("nvmlInit failed: Driver Not Loaded"), std::string::npos)
      << failing.note();
}

DeviceReading device(int index, double util, std::vector<ProcessReading> processes) {
  DeviceReading d;
  d.index = index;
  d.name = "GPU";
  d.uuid = "GPU-" + std::to_string(index);
  d.gpu_utilization_pct = util;
  d.processes = std::move(processes);
  return d;
}

TEST(WorkflowAggregator, GpuSecondsBusyFractionAndMemoryPeakPerWorkflow) {
  WorkflowAggregator aggregator(0);
  auto workflow_of = [](int pid) -> std::optional<std::string> {
    if (pid == 1 || pid == 2) return "a";
    if (pid == 3) return "b";
    return std::nullopt;
  };
  const int64_t second = 1'000'000'000;
  // GPU 0: a's two processes at 30 % + 20 %, b at 10 %; GPU 1: an unknown process, no per-process
  // samples (falls back to the device's 80 %).
  aggregator.add({device(0, 60, {{1, 100, 30.0}, {2, 50, 20.0}, {3, 10, 10.0}}),
                  device(1, 80, {{9, 7, std::nullopt}})},
                 2 * second, workflow_of);
  aggregator.add({device(0, 60, {{1, 300, 70.0}, {2, 50, 60.0}})}, 2 * second, workflow_of);
  auto rows = aggregator.drain(4 * second);
  auto value = [&](const std::string& workflow, int dev, const std::string& metric) {
    for (const auto& r : rows)
      if (r.workflow == workflow && r.row.deviceId == dev && r.row.metric == metric)
        return r.row.value;
    ADD_FAILURE() << workflow << " " << dev << " " << metric;
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(value("a", 0, "gpu_seconds"), 4.0);
  // busy: 2 s * 50 % + 2 s * 100 % (130 % capped) = 3 s of 4.
  EXPECT_DOUBLE_EQ(value("a", 0, "busy_fraction"), 0.75);
  EXPECT_DOUBLE_EQ(value("a", 0, "memory_peak_bytes"), 350);
  EXPECT_DOUBLE_EQ(value("b", 0, "gpu_seconds"), 2.0);
  EXPECT_DOUBLE_EQ(value("b", 0, "busy_fraction"), 0.10);
  EXPECT_DOUBLE_EQ(value(kUnattributed, 1, "busy_fraction"), 0.80);
  EXPECT_EQ(rows.size(), 9u);
  EXPECT_EQ(rows[0].row.window_start, 0);
  EXPECT_EQ(rows[0].row.window_end, 4 * second);
  EXPECT_TRUE(aggregator.drain(5 * second).empty());  // a new window starts empty
  EXPECT_DOUBLE_EQ(aggregator.totals().at({"a", 0}).busy_seconds, 3.0);  // totals keep counting
}

TEST(Prometheus, ExpositionFollowsTheTextFormatAndDcgmExporterLabels) {
  ExpositionInput input;
  input.hostname = "node-1";
  input.devices = {device(0, 40, {})};
  input.devices[0].name = "NVIDIA H100 \"SXM\"";
  input.devices[0].memory_used_bytes = 1024;
  input.devices[0].sm_clock_mhz = 1410;
  input.workflows[{"job\\1", 0}] = {10.0, 2.5, 4096};
  input.agents = 3;
  input.device_sampling = true;
  std::string text = render_exposition(input);
  EXPECT_NE(text.find("# TYPE fleetscope_gpu_utilization_ratio gauge\n"), std::string::npos);
  EXPECT_NE(
      text.find("fleetscope_gpu_utilization_ratio{gpu=\"0\",UUID=\"GPU-0\",Hostname=\"node-1\","
                "modelName=\"NVIDIA H100 \\\"SXM\\\"\"} 0.40000000000000002\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("fleetscope_gpu_sm_clock_hertz{gpu=\"0\""), std::string::npos);
  EXPECT_NE(text.find("} 1410000000\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE fleetscope_workflow_gpu_seconds_total counter\n"), std::string::npos);
  EXPECT_NE(text.find(",workflow=\"job\\\\1\"} 10\n"), std::string::npos) << text;
  EXPECT_NE(text.find("fleetscope_workflow_gpu_busy_seconds_total{"), std::string::npos);
  EXPECT_NE(text.find("fleetscope_agents{Hostname=\"node-1\"} 3\n"), std::string::npos);
  EXPECT_EQ(text.find("fleetscope_gpu_power_watts"), std::string::npos)
      << "absent values are not invented";
  EXPECT_EQ(escape_label_value("a\nb"), "a\\nb");
}

std::string http_get(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
    return "connect failed";
  std::string request = "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
  send(fd, request.data(), request.size(), 0);
  std::string reply;
  char chunk[1024];
  ssize_t n;
  while ((n = recv(fd, chunk, sizeof chunk, 0)) > 0) reply.append(chunk, static_cast<size_t>(n));
  close(fd);
  return reply;
}

TEST(Prometheus, EndpointServesMetricsOnLoopbackOnly) {
  int renders = 0;
  MetricsEndpoint endpoint("127.0.0.1", 0,
                           [&] { return "up " + std::to_string(++renders) + "\n"; });
  ASSERT_GT(endpoint.port(), 0);
  std::string reply = http_get(endpoint.port(), "/metrics");
  EXPECT_EQ(reply.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << reply;
  EXPECT_NE(reply.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(reply.find("\r\n\r\nup 1\n"), std::string::npos);
  EXPECT_EQ(http_get(endpoint.port(), "/other").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_THROW(MetricsEndpoint("localhost", 0, [] { return std::string(); }), std::runtime_error);
}

TEST(Prometheus, WorkflowSeriesCarryTheSchedulersIdentity) {
  ExpositionInput input;
  input.hostname = "node-1";
  input.devices = {device(0, 40, {})};
  input.workflows[{"slurm:80", 0}] = {10.0, 2.5, 4096};
  input.workflow_labels["slurm:80"] = {"slurm_job_id=80", "slurm_job_user=al\"ice"};
  std::string text = render_exposition(input);
  EXPECT_NE(
      text.find(",workflow=\"slurm:80\",slurm_job_id=\"80\",slurm_job_user=\"al\\\"ice\"} 10\n"),
      std::string::npos)
      << text;
}

}  // namespace
}  // namespace fleetscope::daemon
