// What an agent tells the daemon about its process: pid, parent chain, devices, command line and
// the workflow (job) it belongs to. Pure functions over explicit inputs so they are tested without
// Slurm or Kubernetes; read_process_facts() gathers the inputs from /proc and the environment.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fleetscope::agent_link {

struct WorkflowId {
  std::string name;
  std::string source;  // 'env', 'slurm', 'kubernetes', 'command'
};

using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The workflow a process belongs to, first match wins:
//  1. FLEETSCOPE_WORKFLOW (set by the user or the launcher);
//  2. Slurm: SLURM_JOB_ID, with the array form SLURM_ARRAY_JOB_ID_SLURM_ARRAY_TASK_ID when set
//     (the ids `squeue` shows; Slurm's environment variables, sbatch(1) "OUTPUT ENVIRONMENT");
//  3. Kubernetes: the pod UID from the cgroup path (kubepods...pod<uid> under cgroup v1 and v2,
//     '_' in the systemd driver's spelling turned back into '-'), named "k8s:<namespace>/<pod>"
//     when POD_NAMESPACE/POD_NAME (downward API) are set, else "k8s:pod-<uid>"; a bare
//     KUBERNETES_SERVICE_HOST with HOSTNAME (the pod name) as the last Kubernetes resort;
//  4. the command line: the basename of argv[0] plus the first argument that is a script
//     (e.g. "python3 train.py"), which is what `ps` users recognise.
WorkflowId detect_workflow(const EnvLookup& env, const std::string& cgroup_text,
                           const std::vector<std::string>& argv);

// Kubernetes pod UID found in /proc/PID/cgroup text, if any.
std::optional<std::string> pod_uid_from_cgroup(const std::string& cgroup_text);
// The container id (64 hex digits) of a Kubernetes pod's container in /proc/PID/cgroup text:
// ".../pod<uid>/<id>" (cgroupfs driver) or ".../cri-containerd-<id>.scope", "crio-<id>.scope",
// "docker-<id>.scope" (systemd driver), if any.
std::optional<std::string> container_id_from_cgroup(const std::string& cgroup_text);
// The Slurm job id in /proc/PID/cgroup text, from Slurm's cgroup plugins:
// ".../slurm/uid_<uid>/job_<id>/step_<s>..." (cgroup v1, "slurm_<node>" with several slurmd
// per node) or ".../slurmstepd.scope/job_<id>/step_<s>..." (cgroup v2), if any.
std::optional<std::string> slurm_job_id_from_cgroup(const std::string& cgroup_text);

// The scheduler's identity of the process, as "key=value" labels the daemon puts on its workflow
// (Prometheus series, the workflow row): Slurm's SLURM_JOB_ID, SLURM_JOB_USER,
// SLURM_ARRAY_JOB_ID and SLURM_ARRAY_TASK_ID as slurm_job_id, slurm_job_user,
// slurm_array_job_id, slurm_array_task_id; Kubernetes' pod UID and container id from the cgroup
// path as k8s_pod_uid, k8s_container_id, and POD_NAMESPACE / POD_NAME (downward API) as
// k8s_namespace, k8s_pod. Empty where there is no scheduler.
std::vector<std::string> scheduler_labels(const EnvLookup& env, const std::string& cgroup_text);

// Parent chain from /proc: parent, grandparent, ... stopping before pid 1 (or at depth 64).
std::vector<int> parent_chain(int pid, const std::string& proc_root = "/proc");
// argv of a process from /proc/PID/cmdline (empty when unreadable).
std::vector<std::string> command_line(int pid, const std::string& proc_root = "/proc");
// CUDA_VISIBLE_DEVICES as ordinals when it lists integers; empty = "not restricted / unknown".
std::vector<int> visible_devices(const EnvLookup& env);

struct ProcessFacts {
  int pid = 0;
  std::vector<int> parent_chain;
  std::vector<int> devices;
  WorkflowId workflow;
  std::string command;              // argv joined by spaces
  std::vector<std::string> labels;  // scheduler_labels()
};

// The facts of the calling process (getpid(), /proc/self, getenv).
ProcessFacts read_process_facts();

}  // namespace fleetscope::agent_link
