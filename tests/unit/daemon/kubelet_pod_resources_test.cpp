// The kubelet's pod-resources client against a real gRPC server (the generated
// v1::PodResourcesLister service) on a temporary Unix socket, serving fabricated pods; and the
// daemon's registration joining its names by GPU UUID (NVML stand-in, fabricated /proc).
#include "fleetscope/kubelet/kubelet_pod_resources.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include "fleetscope/daemon/daemon_core.h"
#include "fleetscope/daemon/rpc_handler.h"
#include "fleetscope_constants.h"
#include "pod_resources.grpc.pb.h"
#include "temp_dir.h"

namespace fleetscope::kubelet {
namespace {

using namespace std::chrono_literals;

// A kubelet's List: the pods it is given; a slow one answers only once released.
class FakeKubelet final : public v1::PodResourcesLister::Service {
 public:
  v1::ListPodResourcesResponse pods;
  bool slow = false;
  std::promise<void> release;
  std::atomic<int> calls{0};

  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* out) override {
    ++calls;
    if (slow) released_.wait();
    *out = pods;
    return grpc::Status::OK;
  }
  void add(const std::string& ns, const std::string& pod, const std::string& container,
           const std::string& resource, const std::vector<std::string>& ids) {
    auto* p = pods.add_pod_resources();
    p->set_namespace_(ns);
    p->set_name(pod);
    auto* c = p->add_containers();
    c->set_name(container);
    auto* d = c->add_devices();
    d->set_resource_name(resource);
    for (const auto& id : ids) d->add_device_ids(id);
  }

 private:
  std::shared_future<void> released_ = release.get_future().share();
};

struct ServedKubelet {
  FakeKubelet service;
  std::unique_ptr<grpc::Server> server;
  void start(const std::string& socket_path) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket_path, grpc::InsecureServerCredentials());
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
    ASSERT_TRUE(server) << "cannot serve on " << socket_path;
  }
  ~ServedKubelet() {
    if (service.slow) service.release.set_value();
    if (server) server->Shutdown();
  }
};

size_t lines_of(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

const std::string kGpuA = "GPU-5eed0000-0000-0000-0000-000000000001";
const std::string kGpuB = "GPU-0b0b0000-0000-0000-0000-000000000002";
const std::string kGpuShared = "GPU-5ba5ed00-0000-0000-0000-000000000003";

TEST(KubeletPodResources, NamesTheGpusOfEachContainerByUuid) {
  test_support::TempDir dir;
  ServedKubelet kubelet;
  kubelet.service.add("ml", "train-0", "trainer", "nvidia.com/gpu", {kGpuA});
  kubelet.service.add("ml", "serve-1", "server", "nvidia.com/gpu", {kGpuB + "::0"});  // replica
  kubelet.service.add("a", "x", "c", "nvidia.com/gpu", {kGpuShared + "::0"});  // time-sliced:
  kubelet.service.add("b", "y", "c", "nvidia.com/gpu", {kGpuShared + "::1"});  // two pods
  kubelet.service.add("ml", "mig", "c", "nvidia.com/mig-1g.10gb", {"MIG-1234"});
  kubelet.service.add("ml", "fpga", "c", "example.com/fpga", {"GPU-not-nvidia"});
  kubelet.start(dir.file("kubelet.sock"));
  std::ostringstream log;
  KubeletPodResources client({.socket_path = dir.file("kubelet.sock"), .refresh = 1h}, log);
  const GpuNames expected{{kGpuA, {"ml", "train-0", "trainer"}},
                          {kGpuB, {"ml", "serve-1", "server"}}};
  EXPECT_EQ(client.gpu_names(), expected);
  EXPECT_EQ(client.gpu_names(), expected);
  EXPECT_EQ(kubelet.service.calls.load(), 1);  // cached until `refresh`
  EXPECT_EQ(log.str(), "");
}

TEST(KubeletPodResources, NoSocketGivesNoNamesAndOneLogLine) {
  test_support::TempDir dir;
  std::ostringstream log;
  KubeletPodResources client({.socket_path = dir.file("absent.sock"), .refresh = 0ms}, log);
  EXPECT_TRUE(client.gpu_names().empty());
  EXPECT_TRUE(client.gpu_names().empty());
  EXPECT_EQ(lines_of(log.str()), 1u) << log.str();
  EXPECT_NE(log.str().find("no socket at " + dir.file("absent.sock")), std::string::npos);

  KubeletPodResources off({.socket_path = "off"}, log);
  EXPECT_TRUE(off.gpu_names().empty());
  EXPECT_EQ(lines_of(log.str()), 1u);
}

TEST(KubeletPodResources, ASlowKubeletGivesNoNamesWithinTheDeadline) {
  test_support::TempDir dir;
  ServedKubelet kubelet;
  kubelet.service.slow = true;
  kubelet.service.add("ml", "train-0", "trainer", "nvidia.com/gpu", {kGpuA});
  kubelet.start(dir.file("kubelet.sock"));
  std::ostringstream log;
  KubeletPodResources client({.socket_path = dir.file("kubelet.sock"), .deadline = 200ms}, log);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(client.gpu_names().empty());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_NE(log.str().find("failed"), std::string::npos) << log.str();
}

TEST(KubeletNames, ReplaceTheDeclaredOnesOfAProcessInAPod) {
  const GpuNames names{{kGpuA, {"ml", "train-0", "trainer"}}};
  const std::vector<std::string> declared{"k8s_namespace=victims", "k8s_pod=their-job",
                                          "k8s_pod_uid=u"};
  EXPECT_EQ(labels_with_kubelet_names(declared, {kGpuB, kGpuA}, names),
            (std::vector<std::string>{"k8s_namespace=ml", "k8s_pod=train-0", "k8s_pod_uid=u"}));
  EXPECT_EQ(labels_with_kubelet_names({"k8s_pod_uid=u"}, {kGpuA}, names),
            (std::vector<std::string>{"k8s_pod_uid=u", "k8s_namespace=ml", "k8s_pod=train-0"}));
  EXPECT_EQ(labels_with_kubelet_names(declared, {kGpuB}, names), declared);  // GPU not named
  EXPECT_EQ(labels_with_kubelet_names({"k8s_pod=p"}, {kGpuA}, names),        // in no pod
            (std::vector<std::string>{"k8s_pod=p"}));
}

// The daemon: an agent in a pod on GPU 1 (NVML stand-in), declaring another pod's names.
struct Registration : ::testing::Test {
  test_support::TempDir dir;
  std::ostringstream log;
  ServedKubelet kubelet;
  std::unique_ptr<daemon::DaemonCore> core;
  std::unique_ptr<daemon::AgentLinkHandler> link;  // the agent's connection: open while it lives
  static constexpr int kPid = 4242;
  const std::string pod_uid = "1d5bd3f2-7b1c-4e0e-9a8f-0123456789ab";

  void SetUp() override {
    setenv("FLEETSCOPE_NVML_STANDIN_DEVICES", "2", 1);
    setenv("FLEETSCOPE_NVML_STANDIN_PROCESSES", "1:4242:1000:30", 1);
    std::filesystem::create_directories(dir.path() / "proc" / std::to_string(kPid));
    std::ofstream(dir.path() / "proc" / std::to_string(kPid) / "cgroup")
        << "0::/kubepods.slice/kubepods-pod1d5bd3f2_7b1c_4e0e_9a8f_0123456789ab.slice/"
           "cri-containerd-"
        << std::string(64, 'c') << ".scope\n";
  }
  void TearDown() override {
    link.reset();
    core.reset();
    unsetenv("FLEETSCOPE_NVML_STANDIN_DEVICES");
    unsetenv("FLEETSCOPE_NVML_STANDIN_PROCESSES");
  }
  void start_daemon() {
    daemon::DaemonConfig config;
    config.database = dir.file("host.db");
    config.nvml_library = NVML_STANDIN;
    config.dcgm_library = "off";
    config.proc_root = (dir.path() / "proc").string();
    config.kubelet_pod_resources_socket = dir.file("kubelet.sock");
    core = std::make_unique<daemon::DaemonCore>(config, log);
    ASSERT_TRUE(core->device_sampling()) << log.str();
    core->tick();  // the per-process list the registration reads
  }
  std::vector<std::string> register_declaring(const std::vector<std::string>& labels) {
    rpc::AgentHello hello;
    hello.pid = kPid;
    hello.workflow = "k8s:victims/their-job";
    hello.workflow_source = "kubernetes";
    hello.__set_protocol_version(rpc::g_fleetscope_constants.AGENT_PROTOCOL_VERSION);
    hello.__set_labels(labels);
    link = std::make_unique<daemon::AgentLinkHandler>(*core, daemon::Caller{kPid, 1000});
    link->register_agent(hello);
    daemon::RpcHandler api(*core, daemon::Caller{73, 1000});
    const auto status = api.status();
    return status.agents.empty() ? std::vector<std::string>{} : status.agents[0].labels;
  }
};

TEST_F(Registration, AnAgentDeclaringAnotherPodsNameGetsTheKubeletsName) {
  kubelet.service.add("ml", "train-0", "trainer", "nvidia.com/gpu", {kGpuA});
  kubelet.start(dir.file("kubelet.sock"));
  start_daemon();
  EXPECT_EQ(
      register_declaring({"k8s_namespace=victims", "k8s_pod=their-job"}),
      (std::vector<std::string>{"k8s_namespace=ml", "k8s_pod=train-0", "k8s_pod_uid=" + pod_uid,
                                "k8s_container_id=" + std::string(64, 'c')}));
  EXPECT_EQ(kubelet.service.calls.load(), 1);
}

TEST_F(Registration, AProcessSeenOnItsGpuAfterRegisteringGetsTheKubeletsNameThen) {
  const std::string list = dir.file("nvml-processes");
  std::ofstream(list) << "";  // registered at CUDA init: no context on a GPU yet
  setenv("FLEETSCOPE_NVML_STANDIN_PROCESSES_FILE", list.c_str(), 1);
  kubelet.service.add("ml", "train-0", "trainer", "nvidia.com/gpu", {kGpuA});
  kubelet.start(dir.file("kubelet.sock"));
  start_daemon();
  const std::vector<std::string> declared{"k8s_namespace=victims", "k8s_pod=their-job"};
  EXPECT_EQ(register_declaring(declared)[1], "k8s_pod=their-job");
  EXPECT_EQ(kubelet.service.calls.load(), 0);
  std::ofstream(list) << "1:4242:1000:30";  // its context on GPU 1
  core->tick();
  unsetenv("FLEETSCOPE_NVML_STANDIN_PROCESSES_FILE");
  daemon::RpcHandler api(*core, daemon::Caller{73, 1000});
  const auto status = api.status();
  ASSERT_EQ(status.agents.size(), 1u);
  EXPECT_EQ(
      status.agents[0].labels,
      (std::vector<std::string>{"k8s_namespace=ml", "k8s_pod=train-0", "k8s_pod_uid=" + pod_uid,
                                "k8s_container_id=" + std::string(64, 'c')}));
  EXPECT_EQ(kubelet.service.calls.load(), 1);
}

TEST_F(Registration, WithoutAKubeletTheDeclaredNamesStay) {
  start_daemon();  // no server on the socket path
  EXPECT_EQ(
      register_declaring({"k8s_namespace=ml", "k8s_pod=train-0"}),
      (std::vector<std::string>{"k8s_namespace=ml", "k8s_pod=train-0", "k8s_pod_uid=" + pod_uid,
                                "k8s_container_id=" + std::string(64, 'c')}));
  EXPECT_NE(log.str().find("kubelet pod-resources: no socket at"), std::string::npos) << log.str();
}

TEST_F(Registration, ASlowKubeletDoesNotHoldTheRegistrationPastItsDeadline) {
  kubelet.service.slow = true;
  kubelet.service.add("ml", "train-0", "trainer", "nvidia.com/gpu", {kGpuA});
  kubelet.start(dir.file("kubelet.sock"));
  start_daemon();
  const auto start = std::chrono::steady_clock::now();
  const auto labels = register_declaring({"k8s_namespace=ml", "k8s_pod=declared"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);  // the 1 s deadline, not the server
  ASSERT_FALSE(labels.empty());
  EXPECT_EQ(labels[1], "k8s_pod=declared");
}

}  // namespace
}  // namespace fleetscope::kubelet
