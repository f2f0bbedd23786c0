#include "fleetscope/kubelet/kubelet_pod_resources.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <optional>
#include <set>

#include "pod_resources.grpc.pb.h"

namespace fleetscope::kubelet {
namespace {

// The device ids of a GPU given to a container: the NVIDIA device plugin's `GPU-<uuid>`, with
// `::<replica>` appended when the GPU is time-sliced between containers.
std::optional<std::string> gpu_uuid_of_device_id(const std::string& id) {
  if (id.rfind("GPU-", 0) != 0) return std::nullopt;  // MIG-..., another vendor's device
  return id.substr(0, id.find("::"));
}

GpuNames gpu_names_of(const v1::ListPodResourcesResponse& response) {
  GpuNames names;
  std::set<std::string> shared;
  for (const auto& pod : response.pod_resources())
    for (const auto& container : pod.containers())
      for (const auto& devices : container.devices()) {
        if (devices.resource_name().rfind("nvidia.com/", 0) != 0) continue;
        for (const auto& id : devices.device_ids()) {
          const auto uuid = gpu_uuid_of_device_id(id);
          if (!uuid || shared.count(*uuid)) continue;
          ContainerName name{pod.namespace_(), pod.name(), container.name()};
          auto [it, inserted] = names.try_emplace(*uuid, name);
          if (!inserted && it->second != name) {
            names.erase(it);
            shared.insert(*uuid);
          }
        }
      }
  return names;
}

// One List call; nullopt with `why` set when there is no answer within `deadline`.
std::optional<GpuNames> list_gpu_names(const std::string& socket_path,
                                       std::chrono::milliseconds deadline, std::string& why) {
  struct stat st {};
  if (::stat(socket_path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    why = "no socket at " + socket_path;
    return std::nullopt;
  }
  // A channel per call: a restarted kubelet is found again at the next refresh, with no
  // reconnection backoff of an old channel in the way.
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(16 << 20);  // a node of many pods (dcgm-exporter's bound)
  auto channel = grpc::CreateCustomChannel("unix://" + socket_path,
                                           grpc::InsecureChannelCredentials(), arguments);
  auto stub = v1::PodResourcesLister::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  v1::ListPodResourcesResponse response;
  const grpc::Status status = stub->List(&context, v1::ListPodResourcesRequest{}, &response);
  if (!status.ok()) {
    why = "List on " + socket_path + " failed: " + status.error_message();
    return std::nullopt;
  }
  return gpu_names_of(response);
}

}  // namespace

KubeletPodResources::KubeletPodResources(Options options, std::ostream& log)
    : options_(std::move(options)), log_(log) {}

KubeletPodResources::~KubeletPodResources() = default;

GpuNames KubeletPodResources::gpu_names() {
  if (options_.socket_path.empty() || options_.socket_path == "off") return {};
  std::unique_lock lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (asking_ || (asked_ && now - asked_at_ < options_.refresh)) return names_;
  asking_ = true;
  lock.unlock();
  std::string why;
  std::optional<GpuNames> fresh = list_gpu_names(options_.socket_path, options_.deadline, why);
  lock.lock();
  asking_ = false;
  asked_ = true;
  asked_at_ = std::chrono::steady_clock::now();
  if (fresh) {
    if (failing_)
      log_ << "fleetscoped: kubelet pod-resources: reading pod names again from "
           << options_.socket_path << '\n';
    failing_ = false;
    names_ = std::move(*fresh);
  } else {
    if (!failing_)
      log_ << "fleetscoped: kubelet pod-resources: " << why
           << "; pod names are the agents' (downward API) until it answers\n";
    failing_ = true;
    names_.clear();
  }
  return names_;
}

bool in_pod(const std::vector<std::string>& labels) {
  for (const auto& label : labels)
    if (label.rfind("k8s_pod_uid=", 0) == 0) return true;
  return false;
}

std::vector<std::string> labels_with_kubelet_names(const std::vector<std::string>& labels,
                                                   const std::vector<std::string>& gpu_uuids,
                                                   const GpuNames& names) {
  const ContainerName* found = nullptr;
  for (const auto& uuid : gpu_uuids)
    if (auto it = names.find(uuid); !found && it != names.end()) found = &it->second;
  if (!in_pod(labels) || !found) return labels;
  std::vector<std::string> out;
  bool namespace_set = false, pod_set = false;
  for (const auto& label : labels) {
    if (label.rfind("k8s_namespace=", 0) == 0) {
      out.push_back("k8s_namespace=" + found->namespace_name);
      namespace_set = true;
    } else if (label.rfind("k8s_pod=", 0) == 0) {
      out.push_back("k8s_pod=" + found->pod);
      pod_set = true;
    } else {
      out.push_back(label);
    }
  }
  if (!namespace_set) out.push_back("k8s_namespace=" + found->namespace_name);
  if (!pod_set) out.push_back("k8s_pod=" + found->pod);
  return out;
}

}  // namespace fleetscope::kubelet
