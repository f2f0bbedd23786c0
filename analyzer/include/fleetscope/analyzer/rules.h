// Antipattern rules. Each rule is a small class in a registry; its thresholds are named,
// configurable, and their defaults cite the tool they come from. A rule turns the metrics of one
// capture into findings (severity, windows, estimated recoverable GPU time, evidence, advice).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/analyzer/capture_data.h"
#include "fleetscope/analyzer/metrics.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::analyzer {

struct Threshold {
  std::string name;    // e.g. "min_gap_ns"
  double value = 0;    // default value, in the unit the name states
  std::string source;  // where the default comes from, e.g. "nsys analyze gpu_gaps (500 ms)"
};

// What a capture contains, counted once per analysis: rules read it to say which input they lack.
struct DataInventory {
  size_t kernels = 0, memcpys = 0, memsets = 0;
  size_t runtime_calls = 0;
  size_t correlated_gpu_events = 0;      // with a launching runtime/driver call
  size_t kernels_with_grid = 0;          // grid size known
  size_t kernels_with_occupancy = 0;     // estimated achieved occupancy known
  size_t memcpys_with_memory_kinds = 0;  // source or destination memory kind known
  size_t gpus_with_capacity = 0, gpus_with_sm_count = 0;
  size_t iterations = 0, cpu_ops = 0, dataloader_ops = 0, memory_events = 0;
  size_t gpu_events() const { return kernels + memcpys + memsets; }
};
DataInventory take_inventory(const CaptureData& data);

// Names of the inputs rules need, phrased for the job's owner (shared by rules and metrics).
namespace needs {
inline constexpr const char* gpu_activity = "GPU activity (kernels, memcpys or memsets)";
inline constexpr const char* kernels = "GPU kernels";
inline constexpr const char* runtime_calls =
    "CUDA runtime/driver API calls (Kineto cuda_runtime/cuda_driver events, CUPTI RUNTIME/DRIVER "
    "activity)";
inline constexpr const char* launch_correlation =
    "correlation ids linking GPU work to the API calls that launched it";
inline constexpr const char* steps =
    "profiler steps (ProfilerStep#N ranges from torch.profiler's schedule, or iteration markers)";
inline constexpr const char* cpu_ops = "CPU operator ranges (Kineto cpu_op events)";
inline constexpr const char* memory_events =
    "memory allocation events (torch.profiler profile_memory=True, or CUPTI MEMORY2 activity)";
inline constexpr const char* gpu_capacity =
    "GPU memory capacity (Kineto deviceProperties totalGlobalMem, or NVML)";
inline constexpr const char* sm_count =
    "SM count per GPU (Kineto deviceProperties numSms / multiProcessorCount)";
inline constexpr const char* grid = "kernel grid dimensions (Kineto kernel args \"grid\")";
inline constexpr const char* occupancy =
    "estimated achieved occupancy per kernel (Kineto kernel args \"est. achieved occupancy %\")";
inline constexpr const char* memory_kinds =
    "memcpy source/destination memory kinds (Pageable/Pinned/Device in the copy's name or CUPTI "
    "srcKind/dstKind)";
inline constexpr const char* host_activity =
    "host activity (CPU operator ranges or CUDA API calls)";
}  // namespace needs

// Threshold overrides, keyed "rule_id.threshold_name".
using ThresholdOverrides = std::map<std::string, double>;

// Metrics shared by the rules of one analysis, computed once on first use.
class AnalysisContext {
 public:
  AnalysisContext(const CaptureData& data, ThresholdOverrides overrides = {});
  const CaptureData& data() const { return data_; }
  const std::vector<TemporalBreakdown>& temporal() const;
  const std::vector<IdleTimeBreakdown>& idle(int64_t consecutive_kernel_delay_ns) const;
  const LaunchStatistics& launches(int64_t runtime_cutoff_ns, int64_t delay_cutoff_ns) const;
  const std::vector<GpuUtilization>& utilization() const;
  const DataInventory& inventory() const;
  // Override if present, else the default.
  double threshold(const std::string& rule, const Threshold& t) const;
  // When the analysis ran (findings' created_ns).
  int64_t now_ns() const { return now_ns_; }

 private:
  const CaptureData& data_;
  ThresholdOverrides overrides_;
  int64_t now_ns_;
  mutable std::optional<std::vector<TemporalBreakdown>> temporal_;
  mutable std::map<int64_t, std::vector<IdleTimeBreakdown>> idle_;
  mutable std::map<std::pair<int64_t, int64_t>, LaunchStatistics> launches_;
  mutable std::optional<std::vector<GpuUtilization>> utilization_;
  mutable std::optional<DataInventory> inventory_;
};

class Rule {
 public:
  virtual ~Rule() = default;
  virtual std::string id() const = 0;
  virtual std::string title() const = 0;  // one line for the catalogue
  virtual std::vector<Threshold> thresholds() const = 0;
  // The data this rule needs and the capture lacks, each phrased for the job's owner ("kernel
  // grid dimensions (Kineto kernel args \"grid\")"). When it is not empty, analyze() reports
  // "not evaluated: needs ..." and does not call evaluate(): a rule must never pass silently
  // because its input is missing. A capture that has the input but no antipattern is evaluated.
  virtual std::vector<std::string> unmet_needs(const AnalysisContext& context) const = 0;
  virtual std::vector<store::Finding> evaluate(const AnalysisContext& context) const = 0;
  // The optional parts of a capture (CaptureParts) that unmet_needs() and evaluate() read; GPU
  // events, iterations, GPU properties, processes and names are always loaded. `analyze DB` loads
  // the union over the selected rules (parts_needed(), analysis.h). A rule that does not say
  // reads everything.
  virtual CaptureParts reads() const { return CaptureParts::all(); }

 protected:
  double threshold(const AnalysisContext& context, const std::string& name) const;
};

// Severity from the share of the denominator the impact represents:
// >= 50 % critical, >= 25 % high, >= 10 % medium, >= 2 % low, else info.
std::string severity_for(int64_t impact_ns, int64_t denominator_ns);

class RuleRegistry {
 public:
  // Every built-in rule, in catalogue order.
  static const RuleRegistry& builtin();
  void add(std::unique_ptr<Rule> rule);
  const std::vector<std::unique_ptr<Rule>>& rules() const { return rules_; }
  const Rule* find(const std::string& id) const;

 private:
  std::vector<std::unique_ptr<Rule>> rules_;
};

// Factories of the built-in rules (rules_builtin.cpp).
std::vector<std::unique_ptr<Rule>> make_builtin_rules();

}  // namespace fleetscope::analyzer
