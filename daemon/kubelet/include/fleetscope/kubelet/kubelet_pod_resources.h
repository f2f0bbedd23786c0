// Kubernetes pod names from the kubelet's pod-resources socket, as dcgm-exporter gets them: the
// kubelet's List (k8s.io/kubelet pkg/apis/podresources/v1/api.proto) says which container of
// which pod holds which device. It carries no pod UID, so the join is by device id: for
// `nvidia.com/gpu` the NVIDIA device plugin's ids are GPU UUIDs (`GPU-...`, `GPU-...::N` for a
// time-sliced replica), the ones NVML reports. The kubelet's word is authoritative where an
// agent's downward-API environment (POD_NAMESPACE/POD_NAME) is only the process's claim.
//
// No gRPC header here: the generated code stays in daemon/kubelet.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

namespace fleetscope::kubelet {

// The kubelet's socket (KubeletSocket in k8s.io/kubelet's podresources server).
inline constexpr const char* kDefaultPodResourcesSocket =
    "/var/lib/kubelet/pod-resources/kubelet.sock";

struct ContainerName {
  std::string namespace_name, pod, container;
  bool operator==(const ContainerName&) const = default;
};

// GPU UUID -> the container the kubelet gave it to. A GPU the kubelet gave to several containers
// (time-slicing replicas) is left out: its processes' pod cannot be told from the GPU. MIG devices
// (`MIG-...` ids) are left out too: NVML's per-process list names the parent GPU.
using GpuNames = std::map<std::string, ContainerName>;

class KubeletPodResources {
 public:
  struct Options {
    std::string socket_path = kDefaultPodResourcesSocket;  // "" or "off": never asked
    std::chrono::milliseconds deadline{1000};              // of one List call
    std::chrono::milliseconds refresh{10'000};             // the names are asked at most this often
  };
  KubeletPodResources(Options options, std::ostream& log);
  ~KubeletPodResources();
  KubeletPodResources(const KubeletPodResources&) = delete;
  KubeletPodResources& operator=(const KubeletPodResources&) = delete;

  // The names of the last List, asked again when older than `refresh` (one caller asks, the
  // others meanwhile get the previous names: no caller waits on another's call). A missing
  // socket, a failing or late call give no names and one log line until it works again; never
  // an exception.
  GpuNames gpu_names();

 private:
  Options options_;
  std::ostream& log_;
  std::mutex mutex_;  // guards what follows; never held across the List call
  GpuNames names_;
  bool asked_ = false, asking_ = false, failing_ = false;
  std::chrono::steady_clock::time_point asked_at_;
};

// Whether `labels` ("key=value") place the process in a pod (a k8s_pod_uid label).
bool in_pod(const std::vector<std::string>& labels);

// `labels` ("key=value", kernel_checked_labels) of a process using the GPUs `gpu_uuids`, with
// k8s_namespace and k8s_pod set to the kubelet's names of the first of those GPUs it knows (in
// place, or appended). Unchanged for a process in no pod (no k8s_pod_uid label) or on GPUs the
// kubelet names none of.
std::vector<std::string> labels_with_kubelet_names(const std::vector<std::string>& labels,
                                                   const std::vector<std::string>& gpu_uuids,
                                                   const GpuNames& names);

}  // namespace fleetscope::kubelet
