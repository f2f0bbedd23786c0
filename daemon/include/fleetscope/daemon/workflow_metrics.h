// Always-on per-workflow aggregates from device samples, attributed through the pid registry.
// Definitions (per workflow and device, over a window):
//   gpu_seconds        seconds during which at least one process of the workflow had a context on
//                      the device (NVML's running compute processes);
//   busy_seconds       gpu_seconds weighted by the workflow's SM utilization: the sum of its
//                      processes' smUtil (nvmlDeviceGetProcessUtilization), capped at 100 %; when
//                      the driver gives no per-process samples, the device's utilization split
//                      evenly between the workflows on it;
//   busy_fraction      busy_seconds / gpu_seconds;
//   memory_peak_bytes  the largest sum of its processes' used device memory in one sample.
// Wasted GPU-seconds = gpu_seconds - busy_seconds, what `fleetscope fleet` ranks by.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fleetscope/daemon/host_store.h"
#include "fleetscope/daemon/nvml_sampler.h"

namespace fleetscope::daemon {

// Name given to GPU processes that no registered agent accounts for.
inline constexpr const char* kUnattributed = "unattributed";

struct WorkflowTotals {
  double gpu_seconds = 0;
  double busy_seconds = 0;
  int64_t memory_peak_bytes = 0;
};

class WorkflowAggregator {
 public:
  using WorkflowOf = std::function<std::optional<std::string>(int pid)>;
  explicit WorkflowAggregator(int64_t window_start_ns) : window_start_(window_start_ns) {}

  // One sampling interval of `interval_ns` just ended.
  void add(const std::vector<DeviceReading>& readings, int64_t interval_ns,
           const WorkflowOf& workflow_of);
  // workflow_metrics rows for [window start, now); starts the next window.
  std::vector<WorkflowMetricRow> drain(int64_t now_ns);
  // Cumulative since the daemon started, keyed by (workflow, device): Prometheus counters.
  const std::map<std::pair<std::string, int>, WorkflowTotals>& totals() const { return totals_; }

 private:
  int64_t window_start_;
  std::map<std::pair<std::string, int>, WorkflowTotals> window_, totals_;
};

}  // namespace fleetscope::daemon
