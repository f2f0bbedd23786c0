// Runs a set of rules on one capture and (optionally) stores the findings.
#pragma once

#include <string>
#include <vector>

#include "fleetscope/analyzer/capture_data.h"
#include "fleetscope/analyzer/rules.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::store {
class Writer;
}

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

struct AnalysisResult {
  std::vector<store::Finding> findings;  // sorted by impact, largest first
  std::vector<RuleOutcome> rules;        // one per selected rule, in catalogue/selection order
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

// The findings of analyze_capture() alone.
std::vector<store::Finding> analyze(const CaptureData& data, const AnalyzeOptions& options = {});

// Replaces the capture's findings in the database with `findings`; returns their new ids.
std::vector<int64_t> store_findings(store::Writer& writer, int64_t capture_id,
                                    std::vector<store::Finding>& findings);

}  // namespace fleetscope::analyzer
