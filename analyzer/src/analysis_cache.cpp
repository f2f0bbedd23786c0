#include "fleetscope/analyzer/analysis_cache.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::analyzer {

using nlohmann::json;

std::string analysis_meta_key(int64_t capture_id) {
  return "analysis." + std::to_string(capture_id);
}

std::string analysis_key(const std::string& rows_key, const AnalyzeOptions& options) {
  std::string key = "analyzer=" + std::string(analyzer_build_hash()) + ";rules=";
  // The rules as selected (the catalogue's order when none is named): the outcomes come in it.
  const CaptureParts checked = parts_needed(options, false);  // validates the rule ids
  (void)checked;
  if (options.rules.empty()) {
    key += "*";
  } else {
    for (size_t i = 0; i < options.rules.size(); ++i) key += (i ? "," : "") + options.rules[i];
  }
  key += ";thresholds=";
  for (const auto& [name, value] : options.thresholds) {  // a std::map: in name order
    char text[32];
    const auto end = std::to_chars(text, text + sizeof text, value).ptr;  // shortest round trip
    key += name + ":" + std::string(text, end) + ",";
  }
  return key + ";" + rows_key;
}

std::optional<AnalysisResult> cached_analysis(const store::Reader& reader, int64_t capture_id,
                                              const std::string& key) {
  auto stmt = reader.database().prepare("SELECT value FROM meta WHERE key = ?1");
  stmt.bind(1, analysis_meta_key(capture_id));
  if (!stmt.step()) return std::nullopt;
  const json entry = json::parse(stmt.column_text(0), nullptr, false);
  // Anything but the entry store_analysis wrote (a damaged or foreign value) is a miss.
  if (!entry.is_object() || !entry.contains("key") || entry["key"] != key) return std::nullopt;
  if (!entry.contains("findings") || !entry["findings"].is_number_unsigned() ||
      !entry.contains("rules") || !entry["rules"].is_array())
    return std::nullopt;
  AnalysisResult result;
  result.from_cache = true;
  result.cache_key = key;
  for (const json& r : entry["rules"]) {
    if (!r.is_object() || !r.contains("rule") || !r["rule"].is_string() || !r.contains("needs") ||
        !r["needs"].is_array() || !r.contains("findings") || !r["findings"].is_number_unsigned())
      return std::nullopt;
    RuleOutcome outcome;
    outcome.rule = r["rule"].get<std::string>();
    for (const json& need : r["needs"]) {
      if (!need.is_string()) return std::nullopt;
      outcome.needs.push_back(need.get<std::string>());
    }
    outcome.evaluated = outcome.needs.empty();
    outcome.findings = r["findings"].get<size_t>();
    result.rules.push_back(std::move(outcome));
  }
  result.findings = reader.findings(capture_id);
  if (result.findings.size() != entry["findings"].get<size_t>()) return std::nullopt;
  // Stored in the analysis' order (largest impact first); sorted again as analyze_capture does,
  // stably, so a file whose rows were reordered still reads in that order.
  std::stable_sort(result.findings.begin(), result.findings.end(),
                   [](const auto& a, const auto& b) { return a.impact_ns > b.impact_ns; });
  return result;
}

void store_analysis(store::Writer& writer, int64_t capture_id, AnalysisResult& result) {
  store_findings(writer, capture_id, result.findings);  // removes the old entry first
  if (result.cache_key.empty()) return;
  json rules = json::array();
  for (const RuleOutcome& r : result.rules)
    rules.push_back({{"rule", r.rule}, {"needs", r.needs}, {"findings", r.findings}});
  const json entry = {
      {"key", result.cache_key}, {"findings", result.findings.size()}, {"rules", rules}};
  writer.set_meta(analysis_meta_key(capture_id), entry.dump());
}

}  // namespace fleetscope::analyzer
