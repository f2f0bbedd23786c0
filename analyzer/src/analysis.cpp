#include "fleetscope/analyzer/analysis.h"

#include <algorithm>
#include <stdexcept>

#include "fleetscope/analyzer/analysis_cache.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/store/capture_rows.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::analyzer {

std::string RuleOutcome::not_evaluated_text() const {
  if (evaluated) return {};
  std::string text = "not evaluated: needs ";
  for (size_t i = 0; i < needs.size(); ++i) text += (i ? "; " : "") + needs[i];
  return text;
}

std::vector<const RuleOutcome*> AnalysisResult::not_evaluated() const {
  std::vector<const RuleOutcome*> out;
  for (const RuleOutcome& r : rules)
    if (!r.evaluated) out.push_back(&r);
  return out;
}

const char* to_string(FindingsSource source) {
  return source == FindingsSource::stored ? "stored" : "analysed";
}

std::vector<store::Finding> analyze(const CaptureData& data, const AnalyzeOptions& options) {
  return analyze_capture(data, options).findings;
}

namespace {

std::vector<const Rule*> selected_rules(const AnalyzeOptions& options) {
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
  return selected;
}

}  // namespace

CaptureParts parts_needed(const AnalyzeOptions& options, bool with_summary) {
  CaptureParts parts = CaptureParts::gpu_only();
  for (const Rule* rule : selected_rules(options)) parts |= rule->reads();
  if (with_summary) parts.runtime = parts.gpu_syncs = true;
  return parts;
}

AnalysisResult analyze_capture(const CaptureData& data, const AnalyzeOptions& options) {
  const std::vector<const Rule*> selected = selected_rules(options);
  for (const Rule* rule : selected)
    if (!data.loaded.covers(rule->reads()))
      throw std::logic_error("rule " + rule->id() + " reads " + rule->reads().names() +
                             " but the capture was loaded with " + data.loaded.names() + " only");
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
  AnalysisResult result;
  for (const Rule* rule : selected) {
    RuleOutcome outcome;
    outcome.rule = rule->id();
    outcome.needs = rule->unmet_needs(context);
    outcome.evaluated = outcome.needs.empty();
    if (outcome.evaluated) {
      auto found = rule->evaluate(context);
      outcome.findings = found.size();
      result.findings.insert(result.findings.end(), std::make_move_iterator(found.begin()),
                             std::make_move_iterator(found.end()));
    }
    result.rules.push_back(std::move(outcome));
  }
  std::stable_sort(result.findings.begin(), result.findings.end(),
                   [](const auto& a, const auto& b) { return a.impact_ns > b.impact_ns; });
  return result;
}

namespace {

// The rule once the cache has missed (or there is none): analysed now, or the stored findings of
// a capture with no rows left.
AnalysisResult uncached_findings(const CaptureData& data, const store::Reader* reader,
                                 const AnalyzeOptions& options, std::string cache_key) {
  // Why fresh first: see analysis.h and docs/analyzer.md ("Stored and fresh findings").
  // Every load reads the GPU events and the iterations, so a capture with either is analysed
  // without a look at the database; the event tables are asked only for a capture that looks
  // empty, and only when it has stored findings at all.
  if (reader && data.gpu.size() == 0 && data.iterations.empty()) {
    std::vector<store::Finding> stored = reader->findings(data.capture.id);
    if (!stored.empty() && !store::capture_has_rows(reader->database(), data.capture.id)) {
      // Validate the selection as an analysis would (an unknown rule id is an error either way).
      (void)parts_needed(options, false);
      AnalysisResult result;
      result.source = FindingsSource::stored;
      if (!options.rules.empty())
        std::erase_if(stored, [&](const store::Finding& f) {
          return std::find(options.rules.begin(), options.rules.end(), f.rule) ==
                 options.rules.end();
        });
      std::stable_sort(stored.begin(), stored.end(),
                       [](const auto& a, const auto& b) { return a.impact_ns > b.impact_ns; });
      result.findings = std::move(stored);
      return result;
    }
  }
  AnalysisResult result = analyze_capture(data, options);
  result.cache_key = std::move(cache_key);
  return result;
}

}  // namespace

AnalysisResult capture_findings(const CaptureData& data, const store::Reader* reader,
                                const AnalyzeOptions& options) {
  if (!reader || data.rows_key.empty()) return uncached_findings(data, reader, options, {});
  std::string key = analysis_key(data.rows_key, options);
  if (auto cached = cached_analysis(*reader, data.capture.id, key)) return std::move(*cached);
  return uncached_findings(data, reader, options, std::move(key));
}

AnalysisResult capture_findings(const store::Reader& reader, int64_t capture_id,
                                const AnalyzeOptions& options) {
  // The key and a load on a miss read one snapshot (store::ReadSnapshot), checking the capture's
  // row ranges once.
  const store::ReadSnapshot snapshot(reader.database());
  const std::string key =
      analysis_key(store::capture_rows_key(reader.database(), capture_id), options);
  if (auto cached = cached_analysis(reader, capture_id, key)) return std::move(*cached);
  // A miss: the parts the rules read, no more. The entry it may be stored under is the loaded
  // rows' (rows added since the key above was taken belong to it).
  const CaptureData data = load_capture(reader, capture_id, {}, parts_needed(options, false));
  return uncached_findings(data, &reader, options, analysis_key(data.rows_key, options));
}

std::vector<int64_t> store_findings(store::Writer& writer, int64_t capture_id,
                                    std::vector<store::Finding>& findings) {
  // The entry first: findings replaced half-way (a crash) are then under no key.
  writer.set_meta(analysis_meta_key(capture_id), std::nullopt);
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
