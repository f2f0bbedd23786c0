// Prometheus text exposition (format 0.0.4) of the daemon's always-on metrics, and the small HTTP
// endpoint that serves it on 127.0.0.1. Names and units follow Prometheus' naming conventions
// (base units, `_total` for counters, `_ratio` for 0..1); device labels are dcgm-exporter's
// (`gpu`, `UUID`, `Hostname`, `modelName`) so dashboards built for it join on them, plus
// `workflow`. No pid or kernel-name labels: their cardinality is unbounded.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fleetscope/daemon/dcgm_sampler.h"
#include "fleetscope/daemon/nvml_sampler.h"
#include "fleetscope/daemon/workflow_metrics.h"

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
};

std::string render_exposition(const ExpositionInput& input);
// Escapes a label value per the text format (backslash, double quote, newline).
std::string escape_label_value(const std::string& value);

// Serves GET /metrics with `render()`'s text on address:port (port 0 = any free port).
class MetricsEndpoint {
 public:
  MetricsEndpoint(std::string address, int port, std::function<std::string()> render);
  ~MetricsEndpoint();  // stop()
  void stop();
  int port() const { return port_; }

 private:
  void serve();
  std::function<std::string()> render_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace fleetscope::daemon
