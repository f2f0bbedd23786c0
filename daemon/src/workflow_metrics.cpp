#include "fleetscope/daemon/workflow_metrics.h"

#include <algorithm>

namespace fleetscope::daemon {

void WorkflowAggregator::add(const std::vector<DeviceReading>& readings, int64_t interval_ns,
                             const WorkflowOf& workflow_of) {
  const double seconds = static_cast<double>(interval_ns) / 1e9;
  for (const auto& device : readings) {
    struct Share {
      double sm_pct = 0;
      bool has_sm = false;
      int64_t memory = 0;
    };
    std::map<std::string, Share> shares;
    for (const auto& p : device.processes) {
      Share& s = shares[workflow_of(p.pid).value_or(kUnattributed)];
      if (p.sm_utilization_pct) {
        s.sm_pct += *p.sm_utilization_pct;
        s.has_sm = true;
      }
      s.memory += p.memory_used_bytes.value_or(0);
    }
    const double device_pct = device.gpu_utilization_pct.value_or(0);
    for (const auto& [workflow, share] : shares) {
      double busy_pct = share.has_sm ? std::min(100.0, share.sm_pct)
                                     : device_pct / static_cast<double>(shares.size());
      for (auto* table : {&window_, &totals_}) {
        WorkflowTotals& t = (*table)[{workflow, device.index}];
        t.gpu_seconds += seconds;
        t.busy_seconds += seconds * busy_pct / 100.0;
        t.memory_peak_bytes = std::max(t.memory_peak_bytes, share.memory);
      }
    }
  }
}

std::vector<WorkflowMetricRow> WorkflowAggregator::drain(int64_t now_ns) {
  std::vector<WorkflowMetricRow> rows;
  for (const auto& [key, t] : window_) {
    // Not structured bindings: clang 14 (the fuzz preset) cannot capture those in a lambda.
    const auto& workflow = key.first;
    const auto device = key.second;
    auto row = [&](const char* metric, double value) {
      rows.push_back({workflow,
                      {.deviceId = device,
                       .window_start = window_start_,
                       .window_end = now_ns,
                       .metric = metric,
                       .value = value}});
    };
    row("gpu_seconds", t.gpu_seconds);
    row("busy_fraction", t.gpu_seconds > 0 ? t.busy_seconds / t.gpu_seconds : 0.0);
    row("memory_peak_bytes", static_cast<double>(t.memory_peak_bytes));
  }
  window_.clear();
  window_start_ = now_ns;
  return rows;
}

}  // namespace fleetscope::daemon
