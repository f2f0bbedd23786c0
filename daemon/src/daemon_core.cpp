#include "fleetscope/daemon/daemon_core.h"

#include <unistd.h>

#include <chrono>

#include "fleetscope/daemon/prometheus.h"

namespace fleetscope::daemon {

int64_t realtime_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

DaemonCore::DaemonCore(DaemonConfig config, std::ostream& log, Clock clock)
    : config_(std::move(config)),
      log_(log),
      clock_(std::move(clock)),
      hostname_(host_name()),
      started_ns_(clock_()),
      aggregator_(started_ns_) {
  store_ = std::make_unique<HostStore>(config_.database, hostname_);
  traces_ = std::make_unique<TraceControl>(registry_, *store_, clock_, config_.trace_grace_ms);
  sampler_ = std::make_unique<NvmlSampler>(config_.nvml_library);
  kubelet_ = std::make_unique<kubelet::KubeletPodResources>(
      kubelet::KubeletPodResources::Options{.socket_path = config_.kubelet_pod_resources_socket},
      log_);
  if (sampler_->available())
    log_ << "fleetscoped: sampling " << sampler_->device_count() << " GPU(s) every "
         << config_.sample_interval_ms << " ms\n";
  else
    log_ << "fleetscoped: " << sampler_->note() << "; everything else works\n";
  if (config_.dcgm_library != "off") {
    dcgm_ = std::make_unique<DcgmSampler>(config_.dcgm_library, config_.dcgm_hostengine,
                                          config_.sample_interval_ms);
    if (dcgm_->available())
      log_ << "fleetscoped: DCGM profiling fields (SM active, SM occupancy, tensor active) from "
           << dcgm_->library() << " on " << dcgm_->gpus().size() << " GPU(s)"
           << (dcgm_->note().empty() ? "" : "; " + dcgm_->note()) << '\n';
    else
      log_ << "fleetscoped: " << dcgm_->note() << "; everything else works\n";
  }
  traces_->set_window_hooks(
      [this](int64_t id, const std::vector<int>& gpus) { pause_profiling_for(id, gpus); },
      [this](int64_t id, const std::vector<int>&) { resume_profiling_after(id); });
  if (size_t interrupted = traces_->recover_interrupted())
    log_ << "fleetscoped: closing " << interrupted
         << " trace window(s) a previous run left open (at their last committed row)\n";
  sharer::MemoryModel memory;
  memory.context_bytes = config_.cuda_context_mib * sharer::kMiB;
  sharing_ = std::make_unique<SharingHost>(
      *store_, [this] { return sharing_gpus(); }, clock_, log_, memory,
      config_.single_lane_per_gpu != 0);
  last_sample_ns_ = started_ns_;
  next_window_end_ns_ = started_ns_ + config_.metrics_window_s * 1'000'000'000;
  next_retention_ns_ = started_ns_;
  retention_thread_ = std::thread([this] { retention_loop(); });
}

DaemonCore::~DaemonCore() {
  try {
    shutdown();
  } catch (...) {
  }
}

DaemonConfig DaemonCore::config() const {
  std::lock_guard lock(mutex_);
  return config_;
}

void DaemonCore::tick() {
  const int64_t now = clock_();
  traces_->expire();
  {
    std::lock_guard lock(mutex_);
    if (shut_down_) return;
  }
  // The vendor calls (NVML, DCGM) and the rows they give run with no lock that a status call or
  // an RPC waits on: mutex_ is taken only to publish the readings.
  std::vector<DeviceReading> devices;
  bool sampled = false;
  if (sampler_->available()) {
    std::lock_guard sampling(sampler_mutex_);
    devices = sampler_->sample();
    sampled = true;
  }
  std::vector<ProfilingReading> readings;
  if (dcgm_) {
    std::lock_guard dcgm_lock(dcgm_mutex_);
    readings = dcgm_->sample();  // the GPUs of open CUPTI windows are paused: not read
  }
  std::vector<store::DeviceSample> samples;
  for (const auto& d : devices) {
    auto put = [&](const char* metric, auto value) {
      if (value)
        samples.push_back(
            {now, std::nullopt, d.index, metric, 0, static_cast<double>(*value), std::nullopt});
    };
    put("gpu_util_pct", d.gpu_utilization_pct);
    put("mem_used_bytes", d.memory_used_bytes);
    put("power_w", d.power_watts);
    put("sm_clock_mhz", d.sm_clock_mhz);
  }
  for (const auto& r : readings)
    for (auto [metric, value] : {std::pair{"sm_active_ratio", r.sm_active},
                                 std::pair{"sm_occupancy_ratio", r.sm_occupancy},
                                 std::pair{"tensor_active_ratio", r.tensor_active}})
      if (value) samples.push_back({now, std::nullopt, r.gpu, metric, 0, *value, std::nullopt});
  if (!samples.empty()) store_->add_device_samples(std::move(samples));
  std::vector<WorkflowMetricRow> window_rows;
  std::optional<HostStore::RetentionPolicy> retention;
  {
    std::lock_guard lock(mutex_);
    if (shut_down_) return;
    if (sampled) {
      latest_ = devices;
      aggregator_.add(latest_, now - last_sample_ns_,
                      [this](int pid) { return registry_.workflow_of_pid(pid); });
    }
    if (dcgm_) latest_profiling_ = std::move(readings);
    last_sample_ns_ = now;
    if (now >= next_window_end_ns_) {
      window_rows = aggregator_.drain(now);
      next_window_end_ns_ = now + config_.metrics_window_s * 1'000'000'000;
    }
    if (now >= next_retention_ns_) {
      next_retention_ns_ = now + int64_t{3600} * 1'000'000'000;
      retention = retention_policy_locked();
    }
  }
  if (retention) request_retention(*retention, now);  // posted, not waited for
  if (sampled) name_pods_by_kubelet(devices);
  store_->add_workflow_metrics(window_rows);
}

HostStore::RetentionPolicy DaemonCore::retention_policy_locked() const {
  HostStore::RetentionPolicy policy;
  policy.max_bytes = config_.retention_max_mb * 1024 * 1024;
  policy.max_age_ns = config_.retention_max_age_days * 86'400 * 1'000'000'000;
  policy.downsample_after_ns = config_.downsample_after_hours * 3600 * 1'000'000'000;
  return policy;
}

void DaemonCore::request_retention(const HostStore::RetentionPolicy& policy, int64_t now_ns) {
  {
    std::lock_guard lock(retention_mutex_);
    if (retention_stop_) return;
    retention_request_ = {policy, now_ns};  // the latest bounds; one run however many requests
  }
  retention_wake_.notify_one();
}

void DaemonCore::retention_loop() {
  std::unique_lock lock(retention_mutex_);
  for (;;) {
    retention_wake_.wait(lock, [this] { return retention_stop_ || retention_request_; });
    if (retention_stop_) return;
    const auto [policy, now] = *std::exchange(retention_request_, std::nullopt);
    const std::function<void()> probe = retention_probe_;
    lock.unlock();
    std::string message;
    try {
      if (probe) probe();
      const auto result = store_->apply_retention(policy, now);
      if (result.captures_dropped > 0)
        message = "fleetscoped: retention dropped " + std::to_string(result.captures_dropped) +
                  " capture(s)\n";
    } catch (const std::exception& e) {
      // The next run (an hour later, or after a reload) tries again; the daemon goes on.
      message = std::string("fleetscoped: retention failed: ") + e.what() + "\n";
    }
    if (!message.empty()) log_ << message;
    lock.lock();
    ++retention_runs_;
    retention_wake_.notify_all();
  }
}

int64_t DaemonCore::retention_runs() const {
  std::lock_guard lock(retention_mutex_);
  return retention_runs_;
}

void DaemonCore::set_retention_probe(std::function<void()> probe) {
  std::lock_guard lock(retention_mutex_);
  retention_probe_ = std::move(probe);
}

void DaemonCore::name_pods_by_kubelet(const std::vector<DeviceReading>& devices) {
  std::optional<kubelet::GpuNames> names;  // asked only when a pod's process is on a GPU
  for (const auto& agent : registry_.all()) {
    if (!kubelet::in_pod(agent.labels)) continue;
    const auto gpus = gpu_uuids_of_process(devices, agent.pid);
    if (gpus.empty()) continue;
    if (!names) names = kubelet_->gpu_names();
    auto labels = kubelet::labels_with_kubelet_names(agent.labels, gpus, *names);
    if (labels == agent.labels) continue;
    store_->remember_workflow_labels(agent.workflow, labels, /*replace=*/true);
    registry_.set_labels(agent.id, std::move(labels));
  }
}

std::vector<sharer::ServiceGpu> DaemonCore::sharing_gpus() {
  // The GPUs the sampler sees, with their memory: one lane allocator each.
  std::vector<DeviceReading> devices = latest_devices();
  if (devices.empty() && sampler_->available()) {
    {
      std::lock_guard sampling(sampler_mutex_);
      devices = sampler_->sample();
    }
    std::lock_guard lock(mutex_);
    if (latest_.empty()) latest_ = devices;
  }
  std::vector<sharer::ServiceGpu> gpus;
  for (const auto& d : devices)
    if (d.memory_total_bytes && *d.memory_total_bytes > 0)
      gpus.push_back({d.index, d.uuid, *d.memory_total_bytes});
  return gpus;
}

std::vector<DeviceReading> DaemonCore::latest_devices() const {
  std::lock_guard lock(mutex_);
  return latest_;
}

std::string DaemonCore::profiling_note() const {
  return dcgm_ ? dcgm_->note() : "DCGM profiling fields are off (dcgm_library = off)";
}

std::set<int> DaemonCore::profiling_paused() const {
  std::lock_guard lock(dcgm_mutex_);
  return dcgm_ ? dcgm_->paused() : std::set<int>{};
}

void DaemonCore::pause_profiling_for(int64_t capture_id, const std::vector<int>& gpus) {
  std::lock_guard lock(dcgm_mutex_);
  profiling_windows_[capture_id] = gpus;
  apply_profiling_pauses();
}

void DaemonCore::resume_profiling_after(int64_t capture_id) {
  std::lock_guard lock(dcgm_mutex_);
  profiling_windows_.erase(capture_id);
  apply_profiling_pauses();
}

void DaemonCore::apply_profiling_pauses() {
  if (!dcgm_ || !dcgm_->available()) return;
  std::set<int> paused;
  for (const auto& [capture, gpus] : profiling_windows_) {
    if (gpus.empty()) paused.insert(dcgm_->gpus().begin(), dcgm_->gpus().end());
    paused.insert(gpus.begin(), gpus.end());
  }
  dcgm_->set_paused(paused);
}

std::string DaemonCore::exposition() const {
  ExpositionInput input;
  input.hostname = hostname_;
  input.agents = static_cast<int64_t>(registry_.size());
  for (const auto& agent : registry_.all())
    if (!agent.labels.empty()) input.workflow_labels.try_emplace(agent.workflow, agent.labels);
  input.open_windows = static_cast<int64_t>(traces_->open_windows(Caller{0, 0}).size());
  input.device_sampling = sampler_->available();
  input.lane_denials = sharing_->denied_totals();
  try {
    input.workflow_captures = store_->workflow_captures();
    input.workflow_step_tails = store_->workflow_step_tails();
  } catch (const std::exception&) {
    // The page goes out without these series rather than not at all.
  }
  std::lock_guard lock(mutex_);
  input.devices = latest_;
  input.workflows = aggregator_.totals();
  input.profiling = latest_profiling_;
  input.profiling_sampling = profiling_sampling();
  return render_exposition(input);
}

void DaemonCore::agent_gone(int64_t agent_id) {
  traces_->on_agent_gone(agent_id);
  registry_.remove(agent_id);
}

void DaemonCore::reload(const DaemonConfig& fresh) {
  std::lock_guard lock(mutex_);
  for (auto [name, changed] :
       {std::pair{"database", fresh.database != config_.database},
        std::pair{"socket", fresh.socket != config_.socket},
        std::pair{"agent_socket", fresh.agent_socket != config_.agent_socket},
        std::pair{"gate_socket", fresh.gate_socket != config_.gate_socket},
        std::pair{"lane_directory", fresh.lane_directory != config_.lane_directory},
        std::pair{"tcp_port", fresh.tcp_port != config_.tcp_port},
        std::pair{"tcp_address/tls_*",
                  fresh.tcp_address != config_.tcp_address || fresh.tls_cert != config_.tls_cert ||
                      fresh.tls_key != config_.tls_key || fresh.tls_ca != config_.tls_ca ||
                      fresh.tls_client_uids != config_.tls_client_uids ||
                      fresh.tls_default_uid != config_.tls_default_uid},
        std::pair{"prometheus_port", fresh.prometheus_port != config_.prometheus_port},
        std::pair{"nvml_library", fresh.nvml_library != config_.nvml_library},
        std::pair{"dcgm_library/dcgm_hostengine",
                  fresh.dcgm_library != config_.dcgm_library ||
                      fresh.dcgm_hostengine != config_.dcgm_hostengine},
        std::pair{"kubelet_pod_resources_socket",
                  fresh.kubelet_pod_resources_socket != config_.kubelet_pod_resources_socket}})
    if (changed) log_ << "fleetscoped: reload: '" << name << "' changes at the next restart\n";
  config_.sample_interval_ms = fresh.sample_interval_ms;
  config_.metrics_window_s = fresh.metrics_window_s;
  config_.retention_max_mb = fresh.retention_max_mb;
  config_.retention_max_age_days = fresh.retention_max_age_days;
  config_.downsample_after_hours = fresh.downsample_after_hours;
  config_.trace_grace_ms = fresh.trace_grace_ms;
  // The new bounds apply now, on the retention thread; the hourly runs go on from here.
  const int64_t now = clock_();
  next_retention_ns_ = now + int64_t{3600} * 1'000'000'000;
  request_retention(retention_policy_locked(), now);
  log_ << "fleetscoped: configuration reloaded\n";
}

void DaemonCore::shutdown() {
  std::vector<WorkflowMetricRow> rows;
  {
    std::lock_guard lock(mutex_);
    if (shut_down_) return;
    shut_down_ = true;
    rows = aggregator_.drain(clock_());
  }
  {
    std::lock_guard lock(retention_mutex_);
    retention_stop_ = true;  // a run in progress finishes; a posted one is not started
  }
  retention_wake_.notify_all();
  if (retention_thread_.joinable()) retention_thread_.join();
  traces_->set_window_hooks({}, {});  // DCGM is shut down with this object
  traces_->stop();
  sharing_->stop();
  store_->add_workflow_metrics(rows);
  store_->close();
}

}  // namespace fleetscope::daemon
