#include "fleetscope/analyzer/report.h"

#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

namespace fleetscope::analyzer {

namespace {

using nlohmann::json;

json evidence_of(const store::Finding& f) {
  json parsed = json::parse(f.evidence_json, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? json(f.evidence_json) : parsed;
}

json finding_json(const store::Finding& f) {
  json j = {{"id", f.id},
            {"capture_id", f.captureId},
            {"rule", f.rule},
            {"severity", f.severity},
            {"impact_ns", f.impact_ns},
            {"evidence", evidence_of(f)},
            {"recommendation", f.recommendation}};
  j["device"] = f.deviceId ? json(*f.deviceId) : json(nullptr);
  j["window_start_ns"] = f.window_start ? json(*f.window_start) : json(nullptr);
  j["window_end_ns"] = f.window_end ? json(*f.window_end) : json(nullptr);
  // The window(s) the finding covers, [start_ns, end_ns] each; the evidence may list the
  // worst sub-windows too.
  j["windows"] = json::array();
  if (f.window_start && f.window_end) j["windows"].push_back({*f.window_start, *f.window_end});
  return j;
}

std::string device_text(const store::Finding& f) {
  return f.deviceId ? std::to_string(*f.deviceId) : "all";
}

std::string window_text(const store::Finding& f) {
  if (!f.window_start || !f.window_end) return "-";
  return format_duration(*f.window_end - *f.window_start);
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::vector<const RuleOutcome*> not_evaluated(const ReportHeader& header) {
  std::vector<const RuleOutcome*> out;
  for (const RuleOutcome& r : header.rules)
    if (!r.evaluated) out.push_back(&r);
  return out;
}

void render_table_not_evaluated(const ReportHeader& header, std::ostream& out) {
  auto skipped = not_evaluated(header);
  if (skipped.empty()) return;
  out << "\n" << skipped.size() << " rule(s) not evaluated (the capture lacks their input):\n";
  for (const RuleOutcome* r : skipped)
    out << "  " << pad(r->rule, 28) << r->not_evaluated_text() << "\n";
}

// The line a stored (not analysed) set of findings carries in every format.
constexpr const char* kStoredNote =
    "findings as stored in the database: the capture has no rows left to analyse";

void render_table(const std::vector<store::Finding>& findings, const ReportHeader& header,
                  std::ostream& out) {
  out << "capture " << header.capture_id;
  if (!header.source.empty()) out << " (" << header.source << ")";
  out << "\n";
  if (header.findings_source == FindingsSource::stored) out << "  " << kStoredNote << "\n";
  for (const auto& line : header.summary_lines) out << "  " << line << "\n";
  if (findings.empty()) {
    out << "no findings\n";
    render_table_not_evaluated(header, out);
    return;
  }
  out << "\n"
      << pad("SEVERITY", 10) << pad("RULE", 28) << pad("GPU", 5) << pad("IMPACT", 12) << "WINDOW\n";
  for (const auto& f : findings)
    out << pad(f.severity, 10) << pad(f.rule, 28) << pad(device_text(f), 5)
        << pad(format_duration(f.impact_ns), 12) << window_text(f) << "\n";
  out << "\n";
  for (size_t i = 0; i < findings.size(); ++i)
    out << "[" << i + 1 << "] " << findings[i].rule << ": " << findings[i].recommendation << "\n";
  render_table_not_evaluated(header, out);
}

std::string markdown_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

void render_markdown(const std::vector<store::Finding>& findings, const ReportHeader& header,
                     std::ostream& out) {
  out << "# fleetscope findings — capture " << header.capture_id << "\n\n";
  if (!header.source.empty()) out << "Source: `" << header.source << "`\n\n";
  if (header.findings_source == FindingsSource::stored) out << "*" << kStoredNote << ".*\n\n";
  for (const auto& line : header.summary_lines) out << "- " << markdown_escape(line) << "\n";
  if (!header.summary_lines.empty()) out << "\n";
  if (findings.empty()) out << "No findings.\n";
  if (!findings.empty())
    out << "| Severity | Rule | GPU | Impact | Window |\n|---|---|---|---|---|\n";
  for (const auto& f : findings)
    out << "| " << f.severity << " | `" << f.rule << "` | " << device_text(f) << " | "
        << format_duration(f.impact_ns) << " | " << window_text(f) << " |\n";
  for (const auto& f : findings) {
    out << "\n## " << f.rule << " (" << f.severity << ")\n\n"
        << markdown_escape(f.recommendation) << "\n\n<details><summary>Evidence</summary>\n\n"
        << "```json\n"
        << evidence_of(f).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
        << "\n```\n\n</details>\n";
  }
  auto skipped = not_evaluated(header);
  if (skipped.empty()) return;
  out << "\n## Rules not evaluated\n\nThe capture lacks the input these rules need; record it to "
         "have them checked.\n\n| Rule | Needs |\n|---|---|\n";
  for (const RuleOutcome* r : skipped) {
    std::string needs;
    for (const auto& n : r->needs) needs += (needs.empty() ? "" : "; ") + n;
    out << "| `" << r->rule << "` | " << markdown_escape(needs) << " |\n";
  }
}

json rules_json(const ReportHeader& header) {
  json list = json::array();
  for (const RuleOutcome& r : header.rules)
    list.push_back({{"rule", r.rule},
                    {"status", r.evaluated ? "evaluated" : "not_evaluated"},
                    {"findings", r.findings},
                    {"needs", r.needs},
                    {"message", r.evaluated ? std::string() : r.not_evaluated_text()}});
  return list;
}

void render_json(const std::vector<store::Finding>& findings, const ReportHeader& header,
                 std::ostream& out) {
  json list = json::array();
  for (const auto& f : findings) list.push_back(finding_json(f));
  json doc = {{"capture_id", header.capture_id},
              {"source", header.source},
              {"summary", header.summary_lines},
              {"metrics", header.metrics},
              {"findings", list},
              {"findings_source", to_string(header.findings_source)},
              {"rules", rules_json(header)}};
  out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

// Chrome trace format: ts in microseconds; global-scope instant events ("s":"g") so they draw
// across every track, plus one complete event per finding window on a "findings" track.
void render_chrome_trace(const std::vector<store::Finding>& findings, const ReportHeader& header,
                         std::ostream& out) {
  json events = json::array();
  const std::string track = header.findings_source == FindingsSource::stored
                                ? "fleetscope findings (stored)"
                                : "fleetscope findings";
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", "fleetscope findings"},
                    {"args", {{"name", track}}}});
  for (const auto& f : findings) {
    if (!f.window_start) continue;
    json args = {{"severity", f.severity},
                 {"impact_ns", f.impact_ns},
                 {"recommendation", f.recommendation},
                 {"evidence", evidence_of(f)}};
    const double ts_us = double(*f.window_start) / 1000.0;
    events.push_back({{"name", f.rule},
                      {"cat", "fleetscope." + f.severity},
                      {"ph", "i"},
                      {"s", "g"},
                      {"ts", ts_us},
                      {"pid", "fleetscope findings"},
                      {"tid", 0},
                      {"args", args}});
    if (f.window_end && *f.window_end > *f.window_start)
      events.push_back({{"name", f.rule},
                        {"cat", "fleetscope." + f.severity},
                        {"ph", "X"},
                        {"ts", ts_us},
                        {"dur", double(*f.window_end - *f.window_start) / 1000.0},
                        {"pid", "fleetscope findings"},
                        {"tid", 0},
                        {"args", args}});
  }
  out << json{{"traceEvents", events}, {"displayTimeUnit", "ns"}}.dump(
             -1, ' ', false, nlohmann::json::error_handler_t::replace)
      << "\n";
}

}  // namespace

std::optional<ReportFormat> report_format_from_string(const std::string& text) {
  if (text == "table") return ReportFormat::table;
  if (text == "markdown" || text == "md") return ReportFormat::markdown;
  if (text == "json") return ReportFormat::json;
  if (text == "chrome-trace") return ReportFormat::chrome_trace;
  return std::nullopt;
}

std::string format_duration(int64_t ns) {
  std::ostringstream s;
  s << std::fixed;
  const double v = double(ns);
  if (ns >= 1'000'000'000 || ns <= -1'000'000'000)
    s << std::setprecision(3) << v / 1e9 << " s";
  else if (ns >= 1'000'000 || ns <= -1'000'000)
    s << std::setprecision(2) << v / 1e6 << " ms";
  else if (ns >= 1'000 || ns <= -1'000)
    s << std::setprecision(1) << v / 1e3 << " us";
  else
    s << ns << " ns";
  return s.str();
}

void render_findings(const std::vector<store::Finding>& findings, ReportFormat format,
                     const ReportHeader& header, std::ostream& out) {
  switch (format) {
    case ReportFormat::table:
      render_table(findings, header, out);
      break;
    case ReportFormat::markdown:
      render_markdown(findings, header, out);
      break;
    case ReportFormat::json:
      render_json(findings, header, out);
      break;
    case ReportFormat::chrome_trace:
      render_chrome_trace(findings, header, out);
      break;
  }
}

}  // namespace fleetscope::analyzer
