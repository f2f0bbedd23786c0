// The scheduler labels an agent declares, checked against the cgroup path the kernel shows the
// daemon (scheduler_identity.h): built for every way a process can forge them, with fabricated
// cgroup files (cgroup v1 and v2, systemd and cgroupfs drivers, Slurm v1 and v2 layouts).
#include "fleetscope/daemon/scheduler_identity.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "fleetscope/agent_link/process_facts.h"
#include "fleetscope/daemon/daemon_core.h"
#include "fleetscope/daemon/rpc_handler.h"
#include "fleetscope_constants.h"
#include "temp_dir.h"

namespace fleetscope::daemon {
namespace {

const std::string kContainer(64, 'c');
const std::string kPodUid = "1d5bd3f2-7b1c-4e0e-9a8f-0123456789ab";
const std::string kOtherPod = "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b";

// Every layout a pod's process can have, as the host sees /proc/PID/cgroup.
std::vector<std::string> pod_cgroups() {
  return {
      // cgroup v2, systemd driver, containerd / CRI-O / Docker
      "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1d5bd3f2_7b1c_4e0e_9a8f_"
      "0123456789ab.slice/cri-containerd-" +
          kContainer + ".scope\n",
      "0::/kubepods.slice/kubepods-pod1d5bd3f2_7b1c_4e0e_9a8f_0123456789ab.slice/crio-" +
          kContainer + ".scope\n",
      "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1d5bd3f2_7b1c_4e0e_"
      "9a8f_0123456789ab.slice/docker-" +
          kContainer + ".scope\n",
      // cgroup v1, cgroupfs driver: one line per controller
      "12:memory:/kubepods/besteffort/pod" + kPodUid + "/" + kContainer + "\n11:cpu:/kubepods/" +
          "besteffort/pod" + kPodUid + "/" + kContainer +
          "\n1:name=systemd:/kubepods/besteffort/pod" + kPodUid + "/" + kContainer + "\n",
  };
}

std::optional<uid_t> nobody_known(const std::string&) {
  return std::nullopt;
}

TEST(SchedulerIdentity, APodIdentityIsTheKernelsWhateverTheAgentDeclares) {
  // Declared: nothing, the truth, another pod, garbage; the kernel's path decides every time.
  const std::vector<std::vector<std::string>> declarations = {
      {},
      {"k8s_pod_uid=" + kPodUid, "k8s_container_id=" + kContainer},
      {"k8s_pod_uid=" + kOtherPod, "k8s_container_id=" + std::string(64, 'e')},
      {"k8s_pod_uid=x", "k8s_namespace=ml", "k8s_pod=trainer-0"},
  };
  for (const auto& cgroup : pod_cgroups())
    for (const auto& declared : declarations) {
      auto labels = kernel_checked_labels(declared, cgroup, 1000, nobody_known);
      std::map<std::string, std::string> by_key;
      for (const auto& l : labels) by_key[l.substr(0, l.find('='))] = l.substr(l.find('=') + 1);
      EXPECT_EQ(by_key["k8s_pod_uid"], kPodUid) << cgroup;
      EXPECT_EQ(by_key["k8s_container_id"], kContainer) << cgroup;
      EXPECT_EQ(labels.size(), by_key.size()) << "a key twice: " << cgroup;
    }
}

TEST(SchedulerIdentity, APodClaimOfAProcessOutsideAnyPodIsDropped) {
  for (const std::string cgroup :
       {"0::/user.slice/user-1000.slice/session-3.scope\n", "0::/\n",
        "12:memory:/user.slice\n11:cpu:/system.slice/ssh.service\n",
        // kubepods mentioned, but no pod UID (a slice of the node, not a pod)
        "0::/kubepods.slice/kubepods-burstable.slice\n"}) {
    auto labels =
        kernel_checked_labels({"k8s_pod_uid=" + kPodUid, "k8s_container_id=" + kContainer,
                               "k8s_namespace=ml", "k8s_pod=trainer-0", "slurm_array_task_id=3"},
                              cgroup, 1000, nobody_known);
    EXPECT_EQ(labels, (std::vector<std::string>{"slurm_array_task_id=3"})) << cgroup;
  }
}

TEST(SchedulerIdentity, SlurmsCgroupNamesTheJob) {
  for (const std::string cgroup :
       {"0::/system.slice/slurmstepd.scope/job_80/step_0/user/task_0\n",
        "0::/system.slice/slurmstepd.scope/job_80/step_batch/user/task_0\n",
        "12:memory:/slurm/uid_1000/job_80/step_0/task_1\n4:cpuset:/slurm/uid_1000/job_80/step_0\n",
        "7:devices:/slurm_node-3/uid_1000/job_80/step_extern\n"}) {
    EXPECT_EQ(agent_link::slurm_job_id_from_cgroup(cgroup), "80") << cgroup;
    // A forged id is replaced; a missing one is added; the rest keeps its order.
    EXPECT_EQ(kernel_checked_labels({"slurm_job_id=81", "slurm_array_task_id=2"}, cgroup, 1000,
                                    nobody_known),
              (std::vector<std::string>{"slurm_job_id=80", "slurm_array_task_id=2"}))
        << cgroup;
    EXPECT_EQ(kernel_checked_labels({}, cgroup, 1000, nobody_known),
              (std::vector<std::string>{"slurm_job_id=80"}))
        << cgroup;
  }
  // Not Slurm's: a "job_" elsewhere, or without digits.
  for (const std::string cgroup :
       {"0::/user.slice/job_80.scope\n", "0::/system.slice/slurmstepd.scope/job_x/step_0\n",
        "0::/system.slice/slurmstepd.scope\n",
        "0::/system.slice/slurmstepd.scope/job_80x/step_0\n"})
    EXPECT_EQ(agent_link::slurm_job_id_from_cgroup(cgroup), std::nullopt) << cgroup;
  // Without Slurm's cgroup plugin the declared job stays (nothing better is known).
  EXPECT_EQ(kernel_checked_labels({"slurm_job_id=81"}, std::string("0::/user.slice\n"), 1000,
                                  nobody_known),
            (std::vector<std::string>{"slurm_job_id=81"}));
}

TEST(SchedulerIdentity, AJobUserOfAnotherKnownUserIsDropped) {
  auto users = [](const std::string& name) -> std::optional<uid_t> {
    if (name == "alice") return 1000;
    if (name == "bob") return 1001;
    return std::nullopt;
  };
  const std::string cgroup = "0::/user.slice\n";
  EXPECT_EQ(kernel_checked_labels({"slurm_job_user=alice"}, cgroup, 1001, users),
            std::vector<std::string>{});
  EXPECT_EQ(kernel_checked_labels({"slurm_job_user=bob"}, cgroup, 1001, users),
            (std::vector<std::string>{"slurm_job_user=bob"}));
  // A name this host does not know (a container without the cluster's users) stays.
  EXPECT_EQ(kernel_checked_labels({"slurm_job_user=carol"}, std::nullopt, 1001, users),
            (std::vector<std::string>{"slurm_job_user=carol"}));
  // The real lookup: root is uid 0 on every host.
  EXPECT_EQ(uid_of_user_name("root"), uid_t{0});
  EXPECT_EQ(uid_of_user_name("no-such-user-fleetscope-test"), std::nullopt);
}

TEST(SchedulerIdentity, WithoutTheCgroupFileTheDeclaredLabelsStay) {
  const std::vector<std::string> declared = {"k8s_pod_uid=" + kPodUid, "slurm_job_id=80"};
  EXPECT_EQ(kernel_checked_labels(declared, std::nullopt, 1000, nobody_known), declared);
  EXPECT_EQ(read_process_cgroup(-5), std::nullopt);
  test_support::TempDir dir;
  EXPECT_EQ(read_process_cgroup(42, dir.path().string()), std::nullopt);
  // The daemon's own cgroup file reads (the real /proc).
  EXPECT_TRUE(read_process_cgroup(::getpid()).has_value());
}

// Registration through the agent link: a fabricated /proc (DaemonConfig::proc_root) gives the
// registering pid a pod's cgroup; the agent's forged labels do not survive.
TEST(SchedulerIdentity, RegistrationKeepsTheKernelsIdentityNotTheAgents) {
  test_support::TempDir dir;
  const std::string proc = dir.file("proc");
  std::filesystem::create_directories(proc + "/4242");
  std::ofstream(proc + "/4242/cgroup") << pod_cgroups()[0];
  DaemonConfig config;
  config.database = dir.file("host.db");
  config.nvml_library = dir.file("no-such-libnvidia-ml.so");
  config.proc_root = proc;
  std::ostringstream log;
  DaemonCore core(config, log, [] { return int64_t{1'700'000'000'000'000'000}; });
  rpc::AgentHello hello;
  hello.pid = 4242;
  hello.workflow = "k8s:ml/trainer-0";
  hello.workflow_source = "kubernetes";
  hello.__set_protocol_version(rpc::g_fleetscope_constants.AGENT_PROTOCOL_VERSION);
  hello.__set_labels({"k8s_pod_uid=" + kOtherPod, "k8s_namespace=ml", "slurm_job_id=9"});
  AgentLinkHandler link(core, Caller{4242, 1000});
  link.register_agent(hello);
  RpcHandler api(core, Caller{73, 1000});
  auto status = api.status();
  ASSERT_EQ(status.agents.size(), 1u);
  EXPECT_EQ(status.agents[0].labels,
            (std::vector<std::string>{"k8s_pod_uid=" + kPodUid, "k8s_namespace=ml",
                                      "slurm_job_id=9", "k8s_container_id=" + kContainer}));
}

}  // namespace
}  // namespace fleetscope::daemon
