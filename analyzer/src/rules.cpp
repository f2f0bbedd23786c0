#include "fleetscope/analyzer/rules.h"

#include <chrono>
#include <cmath>
#include <stdexcept>

namespace fleetscope::analyzer {

AnalysisContext::AnalysisContext(const CaptureData& data, ThresholdOverrides overrides)
    : data_(data),
      overrides_(std::move(overrides)),
      now_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count()) {}

const std::vector<TemporalBreakdown>& AnalysisContext::temporal() const {
  // Rules look at the whole capture: HTA's last-step filter is for parity only.
  TemporalBreakdownOptions options;
  options.hta_last_step_filter = false;
  if (!temporal_) temporal_ = temporal_breakdown(data_, options);
  return *temporal_;
}

const std::vector<IdleTimeBreakdown>& AnalysisContext::idle(
    int64_t consecutive_kernel_delay_ns) const {
  auto it = idle_.find(consecutive_kernel_delay_ns);
  if (it == idle_.end()) {
    IdleTimeOptions options;
    options.consecutive_kernel_delay_ns = consecutive_kernel_delay_ns;
    options.hta_last_step_filter = false;
    it = idle_.emplace(consecutive_kernel_delay_ns, idle_time_breakdown(data_, options)).first;
  }
  return it->second;
}

const LaunchStatistics& AnalysisContext::launches(int64_t runtime_cutoff_ns,
                                                  int64_t delay_cutoff_ns) const {
  auto key = std::make_pair(runtime_cutoff_ns, delay_cutoff_ns);
  auto it = launches_.find(key);
  if (it == launches_.end()) {
    LaunchStatisticsOptions options;
    options.runtime_cutoff_ns = runtime_cutoff_ns;
    options.launch_delay_cutoff_ns = delay_cutoff_ns;
    options.hta_last_step_filter = false;
    it = launches_.emplace(key, launch_statistics(data_, options)).first;
  }
  return it->second;
}

const std::vector<GpuUtilization>& AnalysisContext::utilization() const {
  if (!utilization_) utilization_ = gpu_utilization(data_);
  return *utilization_;
}

const DataInventory& AnalysisContext::inventory() const {
  if (!inventory_) inventory_ = take_inventory(data_);
  return *inventory_;
}

DataInventory take_inventory(const CaptureData& data) {
  DataInventory inv;
  const GpuEvents& g = data.gpu;
  const bool has_grid = g.grid_blocks.size() == g.size();
  const bool has_occupancy = g.est_occupancy.size() == g.size();
  for (size_t i = 0; i < g.size(); ++i) {
    switch (g.kind[i]) {
      case GpuEventKind::kernel:
        ++inv.kernels;
        inv.kernels_with_grid += has_grid && g.grid_blocks[i] > 0;
        inv.kernels_with_occupancy += has_occupancy && !std::isnan(g.est_occupancy[i]);
        break;
      case GpuEventKind::memcpy:
        ++inv.memcpys;
        inv.memcpys_with_memory_kinds += g.src_kind[i] >= 0 || g.dst_kind[i] >= 0;
        break;
      case GpuEventKind::memset:
        ++inv.memsets;
        break;
    }
    if (i < data.launch_call_of.size() && data.launch_call_of[i] >= 0) ++inv.correlated_gpu_events;
  }
  inv.runtime_calls = data.runtime.size();
  for (const store::GpuInfo& gpu : data.gpus) {
    inv.gpus_with_capacity += gpu.totalMemory && *gpu.totalMemory > 0;
    inv.gpus_with_sm_count += gpu.smCount && *gpu.smCount > 0;
  }
  inv.iterations = data.iterations.size();
  inv.cpu_ops = data.cpu_ops.size();
  inv.dataloader_ops = data.dataloader_ops.size();
  inv.memory_events = data.memory.size();
  return inv;
}

double AnalysisContext::threshold(const std::string& rule, const Threshold& t) const {
  auto it = overrides_.find(rule + "." + t.name);
  return it == overrides_.end() ? t.value : it->second;
}

double Rule::threshold(const AnalysisContext& context, const std::string& name) const {
  for (const Threshold& t : thresholds())
    if (t.name == name) return context.threshold(id(), t);
  throw std::logic_error("rule " + id() + " has no threshold " + name);
}

std::string severity_for(int64_t impact_ns, int64_t denominator_ns) {
  if (denominator_ns <= 0) return "info";
  double share = double(impact_ns) / double(denominator_ns);
  if (share >= 0.50) return "critical";
  if (share >= 0.25) return "high";
  if (share >= 0.10) return "medium";
  if (share >= 0.02) return "low";
  return "info";
}

const RuleRegistry& RuleRegistry::builtin() {
  static const RuleRegistry registry = [] {
    RuleRegistry r;
    for (auto& rule : make_builtin_rules()) r.add(std::move(rule));
    return r;
  }();
  return registry;
}

void RuleRegistry::add(std::unique_ptr<Rule> rule) {
  if (find(rule->id())) throw std::logic_error("duplicate rule id " + rule->id());
  rules_.push_back(std::move(rule));
}

const Rule* RuleRegistry::find(const std::string& id) const {
  for (const auto& rule : rules_)
    if (rule->id() == id) return rule.get();
  return nullptr;
}

}  // namespace fleetscope::analyzer
