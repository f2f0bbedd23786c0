// The daemon's state without its sockets: host database, agent registry, trace windows, device
// sampling and per-workflow aggregates. The RPC handlers and the tests drive it directly; the
// program adds the Thrift servers, the Prometheus endpoint and a thread that calls tick().
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fleetscope/daemon/config.h"
#include "fleetscope/daemon/dcgm_sampler.h"
#include "fleetscope/daemon/host_store.h"
#include "fleetscope/daemon/nvml_sampler.h"
#include "fleetscope/daemon/registry.h"
#include "fleetscope/daemon/sharing_host.h"
#include "fleetscope/daemon/trace_control.h"
#include "fleetscope/daemon/workflow_metrics.h"
#include "fleetscope/kubelet/kubelet_pod_resources.h"

namespace fleetscope::daemon {

int64_t realtime_ns();
std::string host_name();

class DaemonCore {
 public:
  using Clock = std::function<int64_t()>;
  DaemonCore(DaemonConfig config, std::ostream& log, Clock clock = realtime_ns);
  ~DaemonCore();  // shutdown()
  DaemonCore(const DaemonCore&) = delete;
  DaemonCore& operator=(const DaemonCore&) = delete;

  Registry& registry() { return registry_; }
  HostStore& store() { return *store_; }
  TraceControl& traces() { return *traces_; }
  SharingHost& sharing() { return *sharing_; }
  DaemonConfig config() const;
  const std::string& hostname() const { return hostname_; }
  int64_t started_ns() const { return started_ns_; }
  int64_t now() const { return clock_(); }

  // One sampling period: devices -> device_samples and aggregates; overdue windows; a
  // workflow_metrics row set when its window is over. Once an hour it wakes the retention thread
  // (it does not wait for the run: sampling goes on while retention deletes).
  void tick();
  bool device_sampling() const { return sampler_->available(); }
  const std::string& device_sampling_note() const { return sampler_->note(); }
  std::vector<DeviceReading> latest_devices() const;
  // DCGM profiling fields: whether they are sampled, why not, and which GPUs are paused now
  // (a CUPTI window is open on them).
  bool profiling_sampling() const { return dcgm_ && dcgm_->available(); }
  std::string profiling_note() const;
  std::set<int> profiling_paused() const;
  std::string exposition() const;
  void agent_gone(int64_t agent_id);
  // The kubelet's pod names of the node's GPUs (cached; at most one List call of 1 s, made by
  // the caller: call it with no lock held).
  kubelet::GpuNames kubelet_gpu_names() { return kubelet_->gpu_names(); }

  // SIGHUP: takes the settings that can change while running; says which need a restart. Wakes
  // the retention thread with the new bounds.
  void reload(const DaemonConfig& fresh);
  // SIGTERM: the current metrics window, the retention thread (a run in progress finishes), every
  // queued row, then the database is closed.
  void shutdown();

  // Retention runs finished since the daemon started (for tests and the log).
  int64_t retention_runs() const;
  // Test seam: runs on the retention thread at the start of each run, before it touches the
  // database (a test holds a run there to show that ticks go on meanwhile).
  void set_retention_probe(std::function<void()> probe);

 private:
  DaemonConfig config_;
  std::ostream& log_;
  Clock clock_;
  std::string hostname_;
  int64_t started_ns_;
  Registry registry_;
  std::unique_ptr<HostStore> store_;
  std::unique_ptr<TraceControl> traces_;
  std::unique_ptr<NvmlSampler> sampler_;
  std::unique_ptr<DcgmSampler> dcgm_;  // null when dcgm_library = off
  std::unique_ptr<kubelet::KubeletPodResources> kubelet_;
  mutable std::mutex dcgm_mutex_;  // guards dcgm_'s calls, profiling_windows_ (taken last)
  std::map<int64_t, std::vector<int>>
      profiling_windows_;  // open window -> GPUs paused (empty: all)
  void pause_profiling_for(int64_t capture_id, const std::vector<int>& gpus);
  void resume_profiling_after(int64_t capture_id);
  void apply_profiling_pauses();  // dcgm_mutex_ held
  // The kubelet's pod names for agents in pods that `devices` now shows on a GPU (an agent
  // registers at CUDA init, before its context). No lock held: it may ask the kubelet.
  void name_pods_by_kubelet(const std::vector<DeviceReading>& devices);
  std::unique_ptr<SharingHost> sharing_;  // its GPUs are the sampler's (sharing_gpus())
  std::vector<sharer::ServiceGpu> sharing_gpus();
  std::mutex sampler_mutex_;  // serializes sampler_'s NVML calls (tick, sharing_gpus)
  mutable std::mutex mutex_;  // guards latest_, aggregator_, config_, timing below; no I/O under it
  std::vector<DeviceReading> latest_;
  std::vector<ProfilingReading> latest_profiling_;
  WorkflowAggregator aggregator_;
  int64_t last_sample_ns_ = 0;
  int64_t next_window_end_ns_ = 0;
  int64_t next_retention_ns_ = 0;
  bool shut_down_ = false;
  HostStore::RetentionPolicy retention_policy_locked() const;  // mutex_ held

  // The retention thread: one run at a time, off the tick thread (a run flushes the bulk queue
  // and deletes, minutes on a large file). tick() and reload() post a run; requests that come
  // while one runs make one more run after it.
  void request_retention(const HostStore::RetentionPolicy& policy, int64_t now_ns);
  void retention_loop();
  mutable std::mutex retention_mutex_;  // guards the fields below; taken after mutex_, no I/O
  std::condition_variable retention_wake_;
  std::optional<std::pair<HostStore::RetentionPolicy, int64_t>> retention_request_;  // and "now"
  bool retention_stop_ = false;
  int64_t retention_runs_ = 0;
  std::function<void()> retention_probe_;
  std::thread retention_thread_;  // last: started once everything above exists
};

}  // namespace fleetscope::daemon
