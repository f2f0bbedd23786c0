#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>

#include "fleetscope/agent_link/process_facts.h"

namespace fleetscope::agent_link {
namespace {

EnvLookup env_of(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    return it == values.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

const std::string kCgroupV2Pod =
    "0::/kubepods.slice/kubepods-burstable.slice/"
    "kubepods-burstable-pod1d5bd3f2_7b1c_4e0e_9a8f_0123456789ab.slice/"
    "cri-containerd-abc.scope\n";
const std::string kCgroupV1Pod =
    "12:memory:/kubepods/besteffort/pod0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b/0123abcd\n"
    "11:cpu:/kubepods/besteffort/pod0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b/0123abcd\n";

TEST(WorkflowId, EnvironmentWinsOverEverything) {
  auto id = detect_workflow(env_of({{"FLEETSCOPE_WORKFLOW", "resnet-a"}, {"SLURM_JOB_ID", "77"}}),
                            kCgroupV2Pod, {"python3", "train.py"});
  EXPECT_EQ(id.name, "resnet-a");
  EXPECT_EQ(id.source, "env");
}

TEST(WorkflowId, SlurmJobAndArrayTask) {
  EXPECT_EQ(detect_workflow(env_of({{"SLURM_JOB_ID", "77"}}), "", {}).name, "slurm:77");
  auto array = detect_workflow(
      env_of({{"SLURM_JOB_ID", "80"}, {"SLURM_ARRAY_JOB_ID", "77"}, {"SLURM_ARRAY_TASK_ID", "3"}}),
      "", {});
  EXPECT_EQ(array.name, "slurm:77_3");
  EXPECT_EQ(array.source, "slurm");
}

TEST(WorkflowId, KubernetesPodFromCgroupV1AndV2) {
  EXPECT_EQ(pod_uid_from_cgroup(kCgroupV2Pod), "1d5bd3f2-7b1c-4e0e-9a8f-0123456789ab");
  EXPECT_EQ(pod_uid_from_cgroup(kCgroupV1Pod), "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b");
  EXPECT_EQ(pod_uid_from_cgroup("0::/user.slice/user-1000.slice/session-2.scope\n"), std::nullopt);
  auto named = detect_workflow(env_of({{"POD_NAMESPACE", "ml"}, {"POD_NAME", "trainer-0"}}),
                               kCgroupV1Pod, {});
  EXPECT_EQ(named.name, "k8s:ml/trainer-0");
  EXPECT_EQ(named.source, "kubernetes");
  EXPECT_EQ(detect_workflow(env_of({}), kCgroupV2Pod, {}).name,
            "k8s:pod-1d5bd3f2-7b1c-4e0e-9a8f-0123456789ab");
  EXPECT_EQ(detect_workflow(
                env_of({{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}, {"HOSTNAME", "web-1"}}), "", {})
                .name,
            "k8s:web-1");
}

TEST(WorkflowId, CommandLineLast) {
  auto id = detect_workflow(env_of({}), "",
                            {"/usr/bin/python3", "-u", "/home/a/train.py", "--lr", "0.1"});
  EXPECT_EQ(id.name, "python3 train.py");
  EXPECT_EQ(id.source, "command");
  EXPECT_EQ(detect_workflow(env_of({}), "", {"./bench"}).name, "bench");
  EXPECT_EQ(detect_workflow(env_of({}), "", {}).name, "unknown");
}

TEST(ProcessFacts, ParentChainOfAForkedChildStartsWithItsParent) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  pid_t child = fork();
  if (child == 0) {
    char byte;
    (void)!read(pipe_fds[0], &byte, 1);
    _exit(0);
  }
  auto chain = parent_chain(child);
  (void)!write(pipe_fds[1], "x", 1);
  waitpid(child, nullptr, 0);
  ASSERT_FALSE(chain.empty());
  EXPECT_EQ(chain[0], getpid());
  EXPECT_EQ(chain.size(), parent_chain(getpid()).size() + 1);
}

TEST(ProcessFacts, VisibleDevicesAndOwnCommandLine) {
  EXPECT_EQ(visible_devices(env_of({{"CUDA_VISIBLE_DEVICES", "2,0"}})), (std::vector<int>{2, 0}));
  EXPECT_TRUE(visible_devices(env_of({{"CUDA_VISIBLE_DEVICES", "GPU-1234"}})).empty());
  EXPECT_TRUE(visible_devices(env_of({})).empty());
  auto facts = read_process_facts();
  EXPECT_EQ(facts.pid, getpid());
  EXPECT_NE(facts.command.find("daemon_unit_tests"), std::string::npos) << facts.command;
}

TEST(SchedulerLabels, SlurmJobUserAndArrayIndexFromTheEnvironment) {
  auto labels = scheduler_labels(env_of({{"SLURM_JOB_ID", "80"},
                                         {"SLURM_JOB_USER", "alice"},
                                         {"SLURM_ARRAY_JOB_ID", "77"},
                                         {"SLURM_ARRAY_TASK_ID", "3"}}),
                                 "0::/user.slice\n");
  EXPECT_EQ(labels, (std::vector<std::string>{"slurm_job_id=80", "slurm_job_user=alice",
                                              "slurm_array_job_id=77", "slurm_array_task_id=3"}));
  EXPECT_TRUE(scheduler_labels(env_of({}), "0::/user.slice\n").empty());
}

TEST(SchedulerLabels, PodUidAndContainerIdFromTheCgroupPath) {
  const std::string container(64, 'a');
  const std::string other = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  // systemd driver (cgroup v2), containerd.
  const std::string v2 =
      "0::/kubepods.slice/kubepods-burstable.slice/"
      "kubepods-burstable-pod1d5bd3f2_7b1c_4e0e_9a8f_0123456789ab.slice/"
      "cri-containerd-" +
      container + ".scope\n";
  auto labels = scheduler_labels(env_of({{"POD_NAMESPACE", "ml"}, {"POD_NAME", "trainer-0"}}), v2);
  EXPECT_EQ(labels, (std::vector<std::string>{"k8s_pod_uid=1d5bd3f2-7b1c-4e0e-9a8f-0123456789ab",
                                              "k8s_container_id=" + container, "k8s_namespace=ml",
                                              "k8s_pod=trainer-0"}));
  // cgroupfs driver (cgroup v1): .../pod<uid>/<container id>.
  const std::string v1 =
      "12:memory:/kubepods/besteffort/pod0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b/" + other + "\n";
  EXPECT_EQ(container_id_from_cgroup(v1), other);
  // CRI-O and Docker under the systemd driver.
  EXPECT_EQ(container_id_from_cgroup("0::/kubepods.slice/kubepods-pod0f1e2d3c_4b5a_6978_8a9b_"
                                     "0c1d2e3f4a5b.slice/crio-" +
                                     other + ".scope\n"),
            other);
  EXPECT_EQ(container_id_from_cgroup("0::/kubepods.slice/kubepods-pod0f1e2d3c_4b5a_6978_8a9b_"
                                     "0c1d2e3f4a5b.slice/docker-" +
                                     other + ".scope\n"),
            other);
  // Not a pod: no labels, whatever ids the path has.
  EXPECT_EQ(container_id_from_cgroup("0::/system.slice/docker-" + other + ".scope\n"),
            std::nullopt);
  EXPECT_TRUE(
      scheduler_labels(env_of({}), "0::/system.slice/docker-" + other + ".scope\n").empty());
}

}  // namespace
}  // namespace fleetscope::agent_link
