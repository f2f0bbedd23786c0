#include "fleetscope/agent_link/process_facts.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace fleetscope::agent_link {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string basename_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool is_hex_or_dash(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-' || c == '_';
}

bool looks_like_script(const std::string& arg) {
  static const char* const suffixes[] = {".py", ".sh", ".lua", ".jl", ".R"};
  for (const char* suffix : suffixes) {
    std::string s = suffix;
    if (arg.size() > s.size() && arg.compare(arg.size() - s.size(), s.size(), s) == 0) return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> pod_uid_from_cgroup(const std::string& cgroup_text) {
  // cgroup v1/v2, cgroupfs driver: .../kubepods/burstable/pod1234abcd-.../<container>
  // systemd driver:                 .../kubepods-burstable-pod1234abcd_....slice/...
  size_t at = cgroup_text.find("kubepods");
  while (at != std::string::npos) {
    size_t pod = cgroup_text.find("pod", at + 8);
    size_t line_end = cgroup_text.find('\n', at);
    if (pod == std::string::npos || (line_end != std::string::npos && pod > line_end)) {
      at = cgroup_text.find("kubepods", at + 8);
      continue;
    }
    size_t begin = pod + 3, end = begin;
    while (end < cgroup_text.size() && is_hex_or_dash(cgroup_text[end])) ++end;
    std::string uid = cgroup_text.substr(begin, end - begin);
    for (char& c : uid)
      if (c == '_') c = '-';
    if (uid.size() >= 32) return uid;  // a UUID has 32 hex digits plus dashes
    at = cgroup_text.find("kubepods", at + 8);
  }
  return std::nullopt;
}

std::optional<std::string> container_id_from_cgroup(const std::string& cgroup_text) {
  std::istringstream lines(cgroup_text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t pod = line.find("kubepods");
    if (pod == std::string::npos) continue;
    // The first run of exactly 64 hex digits after the kubepods part: the container's id (the
    // pod UID has dashes or underscores, so it is never such a run).
    size_t at = pod;
    while (at < line.size()) {
      while (at < line.size() && !std::isxdigit(static_cast<unsigned char>(line[at]))) ++at;
      size_t end = at;
      while (end < line.size() && std::isxdigit(static_cast<unsigned char>(line[end]))) ++end;
      if (end - at == 64) {
        std::string id = line.substr(at, 64);
        for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return id;
      }
      at = end;
    }
  }
  return std::nullopt;
}

std::optional<std::string> slurm_job_id_from_cgroup(const std::string& cgroup_text) {
  std::istringstream lines(cgroup_text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t slurm = line.find("/slurm");
    if (slurm == std::string::npos) continue;
    // The first path component "job_<digits>" after Slurm's own folder.
    for (size_t at = line.find("/job_", slurm); at != std::string::npos;
         at = line.find("/job_", at + 1)) {
      const size_t begin = at + 5;
      size_t end = begin;
      while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end]))) ++end;
      if (end > begin && end - begin <= 19 && (end == line.size() || line[end] == '/'))
        return line.substr(begin, end - begin);
    }
  }
  return std::nullopt;
}

std::vector<std::string> scheduler_labels(const EnvLookup& env, const std::string& cgroup_text) {
  std::vector<std::string> labels;
  auto add = [&](const char* key, const std::optional<std::string>& value) {
    if (value && !value->empty()) labels.push_back(std::string(key) + "=" + *value);
  };
  add("slurm_job_id", env("SLURM_JOB_ID"));
  add("slurm_job_user", env("SLURM_JOB_USER"));
  add("slurm_array_job_id", env("SLURM_ARRAY_JOB_ID"));
  add("slurm_array_task_id", env("SLURM_ARRAY_TASK_ID"));
  if (auto uid = pod_uid_from_cgroup(cgroup_text)) {
    add("k8s_pod_uid", uid);
    add("k8s_container_id", container_id_from_cgroup(cgroup_text));
    add("k8s_namespace", env("POD_NAMESPACE"));
    add("k8s_pod", env("POD_NAME"));
  }
  return labels;
}

WorkflowId detect_workflow(const EnvLookup& env, const std::string& cgroup_text,
                           const std::vector<std::string>& argv) {
  auto nonempty = [&](const char* name) -> std::optional<std::string> {
    auto value = env(name);
    if (value && !value->empty()) return value;
    return std::nullopt;
  };
  if (auto name = nonempty("FLEETSCOPE_WORKFLOW")) return {*name, "env"};
  if (auto job = nonempty("SLURM_JOB_ID")) {
    auto array_job = nonempty("SLURM_ARRAY_JOB_ID");
    auto task = nonempty("SLURM_ARRAY_TASK_ID");
    if (array_job && task) return {"slurm:" + *array_job + "_" + *task, "slurm"};
    return {"slurm:" + *job, "slurm"};
  }
  if (auto uid = pod_uid_from_cgroup(cgroup_text)) {
    auto ns = nonempty("POD_NAMESPACE");
    auto pod = nonempty("POD_NAME");
    if (ns && pod) return {"k8s:" + *ns + "/" + *pod, "kubernetes"};
    return {"k8s:pod-" + *uid, "kubernetes"};
  }
  if (nonempty("KUBERNETES_SERVICE_HOST")) {
    if (auto host = nonempty("HOSTNAME")) return {"k8s:" + *host, "kubernetes"};
  }
  std::string name = argv.empty() ? std::string("unknown") : basename_of(argv[0]);
  for (size_t i = 1; i < argv.size(); ++i) {
    if (looks_like_script(argv[i])) {
      name += " " + basename_of(argv[i]);
      break;
    }
  }
  return {name, "command"};
}

std::vector<int> parent_chain(int pid, const std::string& proc_root) {
  std::vector<int> chain;
  int current = pid;
  for (int depth = 0; depth < 64; ++depth) {
    std::string stat = read_file(proc_root + "/" + std::to_string(current) + "/stat");
    // Fields after the command name, which is in parentheses and may itself contain ") ".
    auto close = stat.rfind(')');
    if (close == std::string::npos) break;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    int parent = 0;
    if (!(rest >> state >> parent) || parent <= 1) break;
    chain.push_back(parent);
    current = parent;
  }
  return chain;
}

std::vector<std::string> command_line(int pid, const std::string& proc_root) {
  std::string raw = read_file(proc_root + "/" + std::to_string(pid) + "/cmdline");
  std::vector<std::string> argv;
  size_t begin = 0;
  while (begin < raw.size()) {
    size_t end = raw.find('\0', begin);
    if (end == std::string::npos) end = raw.size();
    argv.push_back(raw.substr(begin, end - begin));
    begin = end + 1;
  }
  return argv;
}

std::vector<int> visible_devices(const EnvLookup& env) {
  std::vector<int> devices;
  auto value = env("CUDA_VISIBLE_DEVICES");
  if (!value) return devices;
  std::istringstream list(*value);
  std::string item;
  while (std::getline(list, item, ',')) {
    char* end = nullptr;
    long ordinal = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || ordinal < 0) return {};  // UUIDs or MIG names: unknown
    devices.push_back(static_cast<int>(ordinal));
  }
  return devices;
}

ProcessFacts read_process_facts() {
  EnvLookup env = [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    return value ? std::optional<std::string>(value) : std::nullopt;
  };
  ProcessFacts facts;
  facts.pid = static_cast<int>(getpid());
  facts.parent_chain = parent_chain(facts.pid);
  facts.devices = visible_devices(env);
  auto argv = command_line(facts.pid);
  const std::string cgroup = read_file("/proc/self/cgroup");
  facts.workflow = detect_workflow(env, cgroup, argv);
  facts.labels = scheduler_labels(env, cgroup);
  for (const auto& arg : argv) facts.command += (facts.command.empty() ? "" : " ") + arg;
  return facts;
}

}  // namespace fleetscope::agent_link
