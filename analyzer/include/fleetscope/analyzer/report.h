// Renders findings for people and tools: a terminal table, Markdown, JSON, and Chrome-trace
// instant events (open next to the trace in Perfetto / chrome://tracing).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::analyzer {

enum class ReportFormat { table, markdown, json, chrome_trace };
std::optional<ReportFormat> report_format_from_string(const std::string& text);

struct ReportHeader {
  int64_t capture_id = 0;
  std::string source;                      // file or command the capture came from
  std::vector<std::string> summary_lines;  // optional capture summary shown above the findings
  // What became of each rule (empty when the findings were read back from the database, which
  // keeps findings only). Rules that were not evaluated are listed with the data they need.
  std::vector<RuleOutcome> rules;
  // Whether the findings were analysed now or read back (capture_findings() in analysis.h):
  // every format says which.
  FindingsSource findings_source = FindingsSource::analysed;
  // metrics_json() of the capture, or null when not computed (JSON output only).
  nlohmann::json metrics;
};

void render_findings(const std::vector<store::Finding>& findings, ReportFormat format,
                     const ReportHeader& header, std::ostream& out);

// "12.34 ms" style duration for humans.
std::string format_duration(int64_t ns);

}  // namespace fleetscope::analyzer
