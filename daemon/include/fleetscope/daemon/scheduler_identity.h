// The scheduler's identity of an agent's process, checked against what the kernel says of it.
// An agent declares its labels (validated_hello keeps the known keys), but its environment is
// its own: any process can set SLURM_JOB_ID or claim a pod UID, and bob's job declaring
// alice's job id would count bob's GPU time as alice's job in `fleet --prometheus --by
// slurm_job_id`. The daemon reads /proc/PID/cgroup of the registering process itself (the
// kernel's word, and the host's view: inside a pod with its own cgroup namespace the agent sees
// only "0::/"), and that wins over what the agent declared.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fleetscope::daemon {

// The uid of a user name (getpwnam_r), nullopt when the name is unknown here.
using UidOfUser = std::function<std::optional<uid_t>(const std::string& name)>;
std::optional<uid_t> uid_of_user_name(const std::string& name);

// /proc/PID/cgroup under `proc_root`, nullopt when it cannot be read (no such process, or
// another pid namespace).
std::optional<std::string> read_process_cgroup(int pid, const std::string& proc_root = "/proc");

// `declared` ("key=value", validated_hello) checked for a process of `uid` whose cgroup file
// reads `cgroup_text`:
//  - with the cgroup file read: k8s_pod_uid and k8s_container_id are the ones of the cgroup path
//    (pod_uid_from_cgroup, container_id_from_cgroup), the declared ones dropped; k8s_namespace
//    and k8s_pod (downward API names) are kept only for a process that is in a pod;
//    slurm_job_id is the job of Slurm's cgroup path (slurm_job_id_from_cgroup) when there is
//    one, the declared one otherwise (a cluster without Slurm's cgroup plugin);
//  - without it, the declared labels stay;
//  - slurm_job_user is dropped when it names a known user other than `uid`'s.
// The order of the declared labels is kept, kernel-derived ones replace theirs in place or are
// appended.
std::vector<std::string> kernel_checked_labels(const std::vector<std::string>& declared,
                                               const std::optional<std::string>& cgroup_text,
                                               uid_t uid, const UidOfUser& uid_of_user);

}  // namespace fleetscope::daemon
