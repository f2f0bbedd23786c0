// Runs a set of rules on one capture and (optionally) stores the findings.
#pragma once

#include <string>
#include <vector>

#include "fleetscope/analyzer/capture_data.h"
#include "fleetscope/analyzer/rules.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::store {
class Reader;
class Writer;
}  // namespace fleetscope::store

namespace fleetscope::analyzer {

struct AnalyzeOptions {
  std::vector<std::string> rules;  // empty = all built-in rules
  ThresholdOverrides thresholds;
};

// What became of one selected rule.
struct RuleOutcome {
  std::string rule;
  bool evaluated = false;
  std::vector<std::string> needs;  // the missing data, when not evaluated
  size_t findings = 0;
  // "not evaluated: needs A; B" (empty when evaluated).
  std::string not_evaluated_text() const;
};

// Where a capture's findings come from (capture_findings() decides).
enum class FindingsSource {
  analysed,  // the rules ran now on the capture's rows
  stored,    // read back from the findings table: the capture has no rows left to analyse
};
const char* to_string(FindingsSource source);  // "analysed", "stored"

struct AnalysisResult {
  std::vector<store::Finding> findings;  // sorted by impact, largest first
  std::vector<RuleOutcome> rules;        // one per selected rule, in catalogue/selection order
  FindingsSource source = FindingsSource::analysed;  // stored: `rules` is empty
  // The key this analysis is valid under (analysis_cache.h): the capture's rows as loaded, the
  // rules, the thresholds and the analyzer's build; empty for a capture in no database and for
  // stored findings. store_analysis() files the findings under it.
  std::string cache_key;
  // Read back from the cache under a matching key: what analysing now gives, not re-run.
  bool from_cache = false;
  std::vector<const RuleOutcome*> not_evaluated() const;
};

// The optional parts of a capture the selected rules read (the union of their Rule::reads()),
// plus what the report's summary lines read when `with_summary` (the temporal and idle
// breakdowns and launch statistics: API calls and stream waits). Throws std::invalid_argument
// for an unknown rule id. Loading just these gives the same results as loading everything.
CaptureParts parts_needed(const AnalyzeOptions& options, bool with_summary = true);

// Runs the selected rules. Throws std::logic_error when `data` lacks a part a selected rule
// reads (CaptureData::loaded). Throws std::invalid_argument for an unknown rule id or an override
// naming no threshold of a selected rule.
AnalysisResult analyze_capture(const CaptureData& data, const AnalyzeOptions& options = {});

// The one rule for stored vs fresh findings, which `analyze`, `report`, `fleet`, the analysis
// session (the GUI) and the daemon's live analysis all follow:
//
//   A capture whose rows are there gets the analysis of those rows, with `options`: analysed
//   now, or read back from the analysis cache (analysis_cache.h) when an analysis was stored
//   under exactly the same key: the same rows, rule selection, thresholds and analyzer build,
//   so it is what analysing now would give. Other findings in the database (`fleetscope analyze`
//   with other rules or thresholds, the daemon's analysis with the analyzer of its day, rows
//   added since) are a record of an earlier run, never an input: were they preferred, the same
//   capture would show different findings in different commands, and a changed rule or
//   threshold would never be seen on a database that was analysed once. Only a capture with no
//   rows left (deleted, or written by a tool that kept the findings alone) shows its stored
//   findings, with `source` = stored so that every output says so.
//
// `data` is the capture as loaded (any CaptureParts; its rows_key, which the loader sets, is the
// cache's view of its rows); `reader` is its database, or null for a capture that never was in
// one (a trace imported straight into memory: analysed, never cached). The stored findings are
// looked for only when `data` holds no GPU events and no iterations, and then used only when no
// event table has a row of the capture (store/capture_rows.h).
AnalysisResult capture_findings(const CaptureData& data, const store::Reader* reader,
                                const AnalyzeOptions& options = {});

// The same rule for a capture not loaded yet: the cache is asked first, and the capture is
// loaded (the parts the selected rules read) only when it must be analysed. What `fleet` uses.
AnalysisResult capture_findings(const store::Reader& reader, int64_t capture_id,
                                const AnalyzeOptions& options = {});

// The findings of analyze_capture() alone.
std::vector<store::Finding> analyze(const CaptureData& data, const AnalyzeOptions& options = {});

// Replaces the capture's findings in the database with `findings`; returns their new ids. The
// capture's analysis-cache entry is removed (these findings are filed under no key; to file an
// analysis under its key, analysis_cache.h store_analysis()).
std::vector<int64_t> store_findings(store::Writer& writer, int64_t capture_id,
                                    std::vector<store::Finding>& findings);

}  // namespace fleetscope::analyzer
