#include "fleetscope/analyzer/analysis.h"

#include <algorithm>
#include <stdexcept>

#include "fleetscope/store/writer.h"

namespace fleetscope::analyzer {

std::vector<store::Finding> analyze(const CaptureData& data, const AnalyzeOptions& options) {
  const RuleRegistry& registry = RuleRegistry::builtin();
  std::vector<const Rule*> selected;
  if (options.rules.empty()) {
    for (const auto& rule : registry.rules()) selected.push_back(rule.get());
  } else {
    for (const std::string& id : options.rules) {
      const Rule* rule = registry.find(id);
      if (!rule) throw std::invalid_argument("unknown rule '" + id + "'");
      selected.push_back(rule);
    }
  }
  for (const auto& [key, value] : options.thresholds) {
    bool known = false;
    for (const Rule* rule : selected)
      for (const Threshold& t : rule->thresholds())
        known = known || key == rule->id() + "." + t.name;
    if (!known)
      throw std::invalid_argument("threshold '" + key +
                                  "' names no threshold of the selected rules");
  }

  AnalysisContext context(data, options.thresholds);
  std::vector<store::Finding> findings;
  for (const Rule* rule : selected) {
    auto found = rule->evaluate(context);
    findings.insert(findings.end(), std::make_move_iterator(found.begin()),
                    std::make_move_iterator(found.end()));
  }
  std::stable_sort(findings.begin(), findings.end(),
                   [](const auto& a, const auto& b) { return a.impact_ns > b.impact_ns; });
  return findings;
}

std::vector<int64_t> store_findings(store::Writer& writer, int64_t capture_id,
                                    std::vector<store::Finding>& findings) {
  writer.delete_findings(capture_id);
  std::vector<int64_t> ids;
  for (store::Finding& f : findings) {
    f.captureId = capture_id;
    f.id = writer.add_finding(f);
    ids.push_back(f.id);
  }
  return ids;
}

}  // namespace fleetscope::analyzer
