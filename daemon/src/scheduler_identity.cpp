#include "fleetscope/daemon/scheduler_identity.h"

#include <pwd.h>
#include <unistd.h>

#include <fstream>

#include "fleetscope/agent_link/process_facts.h"

namespace fleetscope::daemon {
namespace {

std::string key_of(const std::string& label) {
  return label.substr(0, label.find('='));
}

}  // namespace

std::optional<uid_t> uid_of_user_name(const std::string& name) {
  long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::string buffer(size > 0 ? static_cast<size_t>(size) : 16384, '\0');
  passwd entry{}, *found = nullptr;
  if (::getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 || !found)
    return std::nullopt;
  return found->pw_uid;
}

std::optional<std::string> read_process_cgroup(int pid, const std::string& proc_root) {
  if (pid <= 0) return std::nullopt;
  std::ifstream file(proc_root + "/" + std::to_string(pid) + "/cgroup");
  if (!file) return std::nullopt;
  // A cgroup file is a few lines; more than 64 KiB is not one (and is not read further).
  std::string text(64 << 10, '\0');
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(file.gcount()));
  if (file.bad()) return std::nullopt;
  return text;
}

std::vector<std::string> kernel_checked_labels(const std::vector<std::string>& declared,
                                               const std::optional<std::string>& cgroup_text,
                                               uid_t uid, const UidOfUser& uid_of_user) {
  std::vector<std::pair<std::string, std::string>> kernel;  // key, value (from the cgroup path)
  bool in_pod = false;
  if (cgroup_text) {
    if (auto pod = agent_link::pod_uid_from_cgroup(*cgroup_text)) {
      in_pod = true;
      kernel.emplace_back("k8s_pod_uid", *pod);
      if (auto container = agent_link::container_id_from_cgroup(*cgroup_text))
        kernel.emplace_back("k8s_container_id", *container);
    }
    if (auto job = agent_link::slurm_job_id_from_cgroup(*cgroup_text))
      kernel.emplace_back("slurm_job_id", *job);
  }
  auto kernel_value = [&](const std::string& key) -> const std::string* {
    for (const auto& [k, v] : kernel)
      if (k == key) return &v;
    return nullptr;
  };
  std::vector<std::string> out;
  std::vector<std::string> placed;
  for (const auto& label : declared) {
    const std::string key = key_of(label);
    if (const std::string* value = kernel_value(key)) {
      out.push_back(key + "=" + *value);
      placed.push_back(key);
      continue;
    }
    if (cgroup_text) {
      // The kernel knows where the process is: a pod identity it does not show is not one.
      if (key == "k8s_pod_uid" || key == "k8s_container_id") continue;
      if ((key == "k8s_namespace" || key == "k8s_pod") && !in_pod) continue;
    }
    if (key == "slurm_job_user") {
      const auto user_uid = uid_of_user(label.substr(key.size() + 1));
      if (user_uid && *user_uid != uid) continue;
    }
    out.push_back(label);
  }
  for (const auto& [key, value] : kernel) {
    bool done = false;
    for (const auto& p : placed) done = done || p == key;
    if (!done) out.push_back(key + "=" + value);
  }
  return out;
}

}  // namespace fleetscope::daemon
