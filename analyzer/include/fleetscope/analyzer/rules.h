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
};

class Rule {
 public:
  virtual ~Rule() = default;
  virtual std::string id() const = 0;
  virtual std::string title() const = 0;  // one line for the catalogue
  virtual std::vector<Threshold> thresholds() const = 0;
  virtual std::vector<store::Finding> evaluate(const AnalysisContext& context) const = 0;

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
