// Prometheus text exposition (format 0.0.4) of the daemon's always-on metrics, and the small HTTP
// endpoint that serves it on 127.0.0.1. Names and units follow Prometheus' naming conventions
// (base units, `_total` for counters, `_ratio` for 0..1); device labels are dcgm-exporter's
// (`gpu`, `UUID`, `Hostname`, `modelName`) so dashboards built for it join on them, plus
// `workflow`. No pid or kernel-name labels: their cardinality is unbounded.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fleetscope/daemon/dcgm_sampler.h"
#include "fleetscope/daemon/host_store.h"
#include "fleetscope/daemon/nvml_sampler.h"
#include "fleetscope/daemon/web_config.h"
#include "fleetscope/daemon/workflow_metrics.h"

struct ssl_ctx_st;

namespace fleetscope::daemon {

// Default port of the endpoint. Prometheus' exporter port list (9100-9999) is fully allocated,
// so this is a choice near dcgm-exporter's 9400; --prometheus-port changes it.
inline constexpr int kDefaultPrometheusPort = 9402;

struct ExpositionInput {
  std::string hostname;
  std::vector<DeviceReading> devices;  // the latest sample
  std::map<std::pair<std::string, int>, WorkflowTotals> workflows;
  int64_t agents = 0;
  int64_t open_windows = 0;
  bool device_sampling = false;
  std::vector<ProfilingReading> profiling;  // DCGM, the latest sample (GPUs not paused)
  bool profiling_sampling = false;
  // Allocations refused by memory lanes since the daemon started, by (workflow, GPU index).
  std::map<std::pair<std::string, int>, uint64_t> lane_denials;
  // Per workflow: captures in the host database, and the rule and impact of its largest finding.
  std::map<std::string, HostStore::WorkflowCaptures> workflow_captures;
  // Per workflow: the step-time tail (p50/p90/p99, jitter) of its latest analysed window.
  std::map<std::string, HostStore::StepTail> workflow_step_tails;
  // Scheduler labels of each workflow ("key=value", registry's agents), added to its series.
  std::map<std::string, std::vector<std::string>> workflow_labels;
};

std::string render_exposition(const ExpositionInput& input);
// Escapes a label value per the text format (backslash, double quote, newline).
std::string escape_label_value(const std::string& value);

struct EndpointLimits {
  int max_clients = 16;  // served at once; more are answered 503 at once
  std::chrono::milliseconds request_deadline{5000};  // accept to the last byte of the answer
};

// Serves GET /metrics with `render()`'s text on address:port (port 0 = any free port). Each
// client has its own thread and a deadline for its whole request and answer, so a slow client
// delays no scrape; stop() cuts the clients still connected off and returns at once.
class MetricsEndpoint {
 public:
  // `web`: TLS and basic authentication (web_config.h); none by default. Throws
  // std::runtime_error naming the file when a certificate or key cannot be loaded.
  MetricsEndpoint(std::string address, int port, std::function<std::string()> render,
                  EndpointLimits limits = {}, WebConfig web = {});
  ~MetricsEndpoint();  // stop()
  void stop();
  int port() const { return port_; }

 private:
  struct Client {
    int fd = -1;
    bool done = false;  // guarded by clients_mutex_
    std::thread thread;
  };
  void serve();
  void answer(int fd);
  void reap_finished();
  std::function<std::string()> render_;
  EndpointLimits limits_;
  WebConfig web_;
  ssl_ctx_st* tls_ = nullptr;  // SSL_CTX when web_.tls
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  std::mutex clients_mutex_;
  std::vector<std::shared_ptr<Client>> clients_;
};

}  // namespace fleetscope::daemon
