// DCGM profiling fields through the stand-in libdcgm.so.4 (tests/standins/dcgm), loaded by the
// sampler's real dlopen path: values, per-GPU pause and resume (counted watch/unwatch calls in the
// stand-in), the daemon storing them in device_samples and exposing them under dcgm-exporter's
// names, pausing the GPUs of a CUPTI window, and a host without libdcgm.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <sstream>

#include "fleetscope/daemon/daemon_core.h"
#include "fleetscope/daemon/dcgm_sampler.h"
#include "fleetscope/daemon/rpc_handler.h"
#include "fleetscope/store/database.h"
#include "fleetscope_constants.h"
#include "temp_dir.h"

namespace fleetscope::daemon {
namespace {

// The stand-in's call counters, read from the same loaded library the sampler uses.
struct StandInCounters {
  void* handle = dlopen(DCGM_STANDIN, RTLD_NOW | RTLD_LOCAL);
  int (*watches_of)(int) = handle ? reinterpret_cast<int (*)(int)>(dlsym(handle,
                                                                         "dcgm_standin_watches"))
                                  : nullptr;
  int (*unwatches_of)(int) = handle
                                 ? reinterpret_cast<int (*)(int)>(dlsym(handle,
                                                                        "dcgm_standin_unwatches"))
                                 : nullptr;
  ~StandInCounters() {
    if (handle) dlclose(handle);
  }
  int watches(int gpu) const { return watches_of(gpu); }
  int unwatches(int gpu) const { return unwatches_of(gpu); }
};

std::set<int> gpus_of(const std::vector<ProfilingReading>& readings) {
  std::set<int> out;
  for (const auto& r : readings) out.insert(r.gpu);
  return out;
}

TEST(DcgmSampler, ReadsTheProfilingFieldsOfEveryGpu) {
  DcgmSampler dcgm(DCGM_STANDIN, "", 1000);
  ASSERT_TRUE(dcgm.available()) << dcgm.note();
  EXPECT_EQ(dcgm.gpus(), (std::vector<int>{0, 1}));
  auto readings = dcgm.sample();
  ASSERT_EQ(readings.size(), 2u);
  EXPECT_EQ(readings[1].gpu, 1);
  EXPECT_DOUBLE_EQ(*readings[1].sm_active, 0.51);
  EXPECT_DOUBLE_EQ(*readings[1].sm_occupancy, 0.26);
  EXPECT_DOUBLE_EQ(*readings[1].tensor_active, 0.135);
}

TEST(DcgmSampler, PausingAGpuUnwatchesItsFieldsAndResumingWatchesThemAgain) {
  StandInCounters counters;
  ASSERT_TRUE(counters.watches_of && counters.unwatches_of);
  DcgmSampler dcgm(DCGM_STANDIN, "", 1000);
  ASSERT_TRUE(dcgm.available()) << dcgm.note();
  const int watched0 = counters.watches(0), watched1 = counters.watches(1);
  const int unwatched0 = counters.unwatches(0), unwatched1 = counters.unwatches(1);
  dcgm.set_paused({1});
  EXPECT_EQ(counters.unwatches(1), unwatched1 + 1);
  EXPECT_EQ(counters.unwatches(0), unwatched0) << "GPU 0 has no window: it keeps sampling";
  EXPECT_EQ(gpus_of(dcgm.sample()), std::set<int>{0});
  dcgm.set_paused({1});  // already paused: no second unwatch
  EXPECT_EQ(counters.unwatches(1), unwatched1 + 1);
  dcgm.set_paused({});
  EXPECT_EQ(counters.watches(1), watched1 + 1);
  EXPECT_EQ(counters.watches(0), watched0);
  EXPECT_EQ(gpus_of(dcgm.sample()), (std::set<int>{0, 1}));
}

TEST(DcgmSampler, WithoutLibdcgmItSaysWhyAndSamplesNothing) {
  DcgmSampler dcgm("/nonexistent/libdcgm.so.4", "", 1000);
  EXPECT_FALSE(dcgm.available());
  EXPECT_NE(dcgm.note().find("no libdcgm"), std::string::npos) << dcgm.note();
  EXPECT_TRUE(dcgm.sample().empty());
  dcgm.set_paused({0});  // harmless
}

struct DaemonWithDcgm : ::testing::Test {
  test_support::TempDir dir;
  std::ostringstream log;
  int64_t now = 1'700'000'000'000'000'000;
  std::unique_ptr<DaemonCore> core;

  void start(const std::string& dcgm_library) {
    DaemonConfig config;
    config.database = dir.file("host.db");
    config.nvml_library = NVML_STANDIN;
    config.dcgm_library = dcgm_library;
    config.trace_grace_ms = 100;
    core = std::make_unique<DaemonCore>(config, log, [this] { return now; });
  }
  int64_t samples_of(const std::string& metric, int device) {
    core->store().flush();
    auto db = store::Database::open(dir.file("host.db"));
    auto q = db.prepare(
        "SELECT count(*) FROM device_samples s JOIN StringIds m ON m.id = s.metric_id "
        "WHERE m.value = ? AND s.deviceId = ?");
    q.bind(1, metric);
    q.bind(2, int64_t{device});
    EXPECT_TRUE(q.step());
    return q.column_int(0);
  }
  void tick() {
    now += 1'000'000'000;
    core->tick();
  }
};

TEST_F(DaemonWithDcgm, SamplesLandInTheDatabaseAndOnThePrometheusPage) {
  start(DCGM_STANDIN);
  ASSERT_TRUE(core->profiling_sampling()) << log.str();
  tick();
  tick();
  EXPECT_EQ(samples_of("sm_active_ratio", 0), 2);
  EXPECT_EQ(samples_of("sm_occupancy_ratio", 1), 2);
  EXPECT_EQ(samples_of("tensor_active_ratio", 1), 2);
  std::string page = core->exposition();
  EXPECT_NE(page.find("# TYPE DCGM_FI_PROF_SM_ACTIVE gauge"), std::string::npos) << page;
  EXPECT_NE(page.find("DCGM_FI_PROF_SM_ACTIVE{gpu=\"1\",UUID=\"GPU-5eed0000-0000-0000-0000-"
                      "000000000001\",Hostname=\""),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("modelName=\"Stand-in GPU 1\"} 0.51"), std::string::npos) << page;
  EXPECT_NE(page.find("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu=\"0\""), std::string::npos) << page;
  EXPECT_NE(page.find("fleetscope_dcgm_profiling_up{Hostname=\""), std::string::npos);
}

TEST_F(DaemonWithDcgm, AWindowPausesTheGpusOfItsProcessesUntilItCloses) {
  start(DCGM_STANDIN);
  ASSERT_TRUE(core->profiling_sampling()) << log.str();
  AgentLinkHandler link(*core, Caller{700, 1000});
  rpc::AgentHello hello;
  hello.pid = 700;
  hello.workflow = "job";
  hello.workflow_source = "env";
  hello.__set_protocol_version(rpc::g_fleetscope_constants.AGENT_PROTOCOL_VERSION);
  hello.devices = {1};  // CUDA_VISIBLE_DEVICES=1
  int64_t id = link.register_agent(hello).agent_id;
  RpcHandler api(*core, Caller{10, 1000});
  rpc::TraceRequest request;
  request.__set_pid(700);
  request.__set_duration_ms(60'000);
  auto started = api.start_trace(request);
  EXPECT_EQ(core->profiling_paused(), std::set<int>{1}) << "paused before the agent is ordered";
  ASSERT_EQ(link.await_order(id, 0).kind, rpc::AgentOrderKind::OPEN_WINDOW);
  const int64_t before1 = samples_of("sm_active_ratio", 1),
                before0 = samples_of("sm_active_ratio", 0);
  tick();
  EXPECT_EQ(samples_of("sm_active_ratio", 1), before1) << "no profiling sample during the window";
  EXPECT_EQ(samples_of("sm_active_ratio", 0), before0 + 1) << "GPU 0 is not traced";
  EXPECT_EQ(core->exposition().find("DCGM_FI_PROF_SM_ACTIVE{gpu=\"1\""), std::string::npos);

  rpc::WindowClosed closed;
  closed.capture_id = started.capture_id;
  closed.dropped_records = 0;
  closed.collector_overhead_ns = 0;
  link.window_closed(id, closed);
  EXPECT_TRUE(core->profiling_paused().empty()) << "resumed once the window closed";
  tick();
  EXPECT_EQ(samples_of("sm_active_ratio", 1), before1 + 1);
}

TEST_F(DaemonWithDcgm, AProcessWithoutVisibleDevicesPausesEveryGpu) {
  start(DCGM_STANDIN);
  AgentLinkHandler link(*core, Caller{701, 1000});
  rpc::AgentHello hello;
  hello.pid = 701;
  hello.workflow = "job";
  hello.workflow_source = "env";
  hello.__set_protocol_version(rpc::g_fleetscope_constants.AGENT_PROTOCOL_VERSION);
  int64_t id = link.register_agent(hello).agent_id;
  RpcHandler api(*core, Caller{10, 1000});
  rpc::TraceRequest request;
  request.__set_pid(701);
  request.__set_duration_ms(60'000);
  api.start_trace(request);
  EXPECT_EQ(core->profiling_paused(), (std::set<int>{0, 1}));
  core->agent_gone(id);  // killed mid-window: resumed all the same
  EXPECT_TRUE(core->profiling_paused().empty());
}

TEST_F(DaemonWithDcgm, WithoutLibdcgmTheDaemonSaysSoOnceAndWorks) {
  start("/nonexistent/libdcgm.so.4");
  for (int i = 0; i < 3; ++i) tick();
  EXPECT_FALSE(core->profiling_sampling());
  std::string text = log.str();
  size_t first = text.find("DCGM profiling fields are off");
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find("DCGM profiling fields are off", first + 1), std::string::npos) << text;
  EXPECT_EQ(samples_of("gpu_util_pct", 0), 3) << "NVML sampling goes on";
  EXPECT_NE(core->exposition().find("fleetscope_dcgm_profiling_up{Hostname=\""), std::string::npos);
}

}  // namespace
}  // namespace fleetscope::daemon
