// The full report of one capture (`fleetscope report DB -o report.html|report.md`): metrics,
// charts, findings and the rules that could not be evaluated, as one HTML or Markdown document.
//
// Content, in order: title, source and capture id; headline metrics per device (metrics_json());
// a GPU utilization chart per device (svg_chart.h); iterations with their step-time breakdown
// (table and chart); launch statistics; per-stream idle breakdown (the streams with the most
// idle time); memory per device when measured; findings sorted by impact (rule, severity, impact,
// windows, top offenders, recommendation); rules not evaluated with the data they need.
//
// HTML is one self-contained file (inline SVG and CSS). Markdown links its charts as sidecar SVG
// files that the caller writes (ReportDocument::charts, paths relative to the document).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/capture_data.h"

namespace fleetscope::analyzer {

enum class DocumentFormat { html, markdown };
// "html" / "htm" and "markdown" / "md".
std::optional<DocumentFormat> document_format_from_string(const std::string& text);

struct ReportDocumentOptions {
  DocumentFormat format = DocumentFormat::html;
  // Markdown only: the directory, relative to the document, that holds the chart files (e.g.
  // "report_files" next to "report.md"). Empty: no charts (e.g. Markdown on stdout).
  std::string chart_dir;
  size_t max_streams = 10;                    // per-stream idle table rows
  size_t max_steps = 50;                      // iteration table rows
  size_t max_offenders = 5, max_windows = 5;  // per finding
};

struct ChartFile {
  std::string relative_path;  // e.g. "report_files/gpu0-utilization.svg"
  std::string svg;
};

struct ReportDocument {
  std::string text;               // the document
  std::vector<ChartFile> charts;  // Markdown sidecar files, to be written next to the document
};

// `result` is analyze_capture(data, ...) of the same capture.
ReportDocument render_report_document(const CaptureData& data, const AnalysisResult& result,
                                      const ReportDocumentOptions& options = {});

// The sidecar directory of a Markdown report, relative to it: "report_files" for "dir/report.md".
std::string chart_dir_for(const std::string& report_path);

// Writes `doc` to `path` and its charts next to it (ChartFile::relative_path is relative to the
// directory of `path`; the chart directory is created when missing, its parent must exist). Every
// file is first written in full to a temporary file beside its target; only when all of them are
// written are they renamed into place, the document last. On failure nothing new is left behind
// (temporary files removed, files renamed where none was before removed again, a chart directory
// this call created removed) and fleetscope::Error / InputError names the file.
// Without `replace` (report -o without --force) no file that appeared at `path` meanwhile is
// replaced (store::AtomicOutput::Replace::no); the charts are the report's own and follow it.
void write_report_document(const std::string& path, const ReportDocument& doc, bool replace = true);

// "1.50 GiB" style size for humans.
std::string format_bytes(int64_t bytes);

}  // namespace fleetscope::analyzer
