#include "fleetscope/analyzer/report_document.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fleetscope/analyzer/metrics.h"
#include "fleetscope/analyzer/metrics_json.h"
#include "fleetscope/analyzer/report.h"
#include "fleetscope/analyzer/rules.h"
#include "fleetscope/analyzer/step_metrics.h"
#include "fleetscope/analyzer/svg_chart.h"
#include "fleetscope/common/file_errors.h"
#include "fleetscope/common/new_file.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/error.h"

namespace fleetscope::analyzer {

namespace {

using nlohmann::json;

// ---- A small document model, rendered to HTML or Markdown ------------------------------------
// All text is plain; the renderers escape it.

struct Table {
  std::vector<std::string> header;
  std::vector<bool> numeric;  // right-aligned columns (by index; missing = false)
  std::vector<std::vector<std::string>> rows;
};

struct Block {
  enum class Kind { heading1, heading2, heading3, paragraph, note, bullets, table, chart };
  Kind kind = Kind::paragraph;
  std::string text;                // headings, paragraphs, notes; the chart's alt text
  std::vector<std::string> items;  // bullets
  Table table;
  std::string svg, chart_file;  // charts: the SVG and its sidecar file name (Markdown)
};

class Document {
 public:
  void h1(std::string text) { add(Block::Kind::heading1, std::move(text)); }
  void h2(std::string text) { add(Block::Kind::heading2, std::move(text)); }
  void h3(std::string text) { add(Block::Kind::heading3, std::move(text)); }
  void paragraph(std::string text) { add(Block::Kind::paragraph, std::move(text)); }
  void note(std::string text) { add(Block::Kind::note, std::move(text)); }
  void bullets(std::vector<std::string> items) {
    if (items.empty()) return;
    Block b;
    b.kind = Block::Kind::bullets;
    b.items = std::move(items);
    blocks_.push_back(std::move(b));
  }
  void table(Table t) {
    Block b;
    b.kind = Block::Kind::table;
    b.table = std::move(t);
    blocks_.push_back(std::move(b));
  }
  void chart(std::string alt, std::string svg, std::string file) {
    Block b;
    b.kind = Block::Kind::chart;
    b.text = std::move(alt);
    b.svg = std::move(svg);
    b.chart_file = std::move(file);
    blocks_.push_back(std::move(b));
  }
  const std::vector<Block>& blocks() const { return blocks_; }

 private:
  void add(Block::Kind kind, std::string text) {
    Block b;
    b.kind = kind;
    b.text = std::move(text);
    blocks_.push_back(std::move(b));
  }
  std::vector<Block> blocks_;
};

const char* kCss =
    "body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;max-width:1000px;"
    "margin:2em auto;padding:0 1em;color:#222;line-height:1.4}"
    "h1{font-size:1.6em}h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #ddd}"
    "h3{font-size:1.05em}"
    "table{border-collapse:collapse;margin:.5em 0 1em;font-size:.9em}"
    "th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}"
    "th{background:#f4f4f4}td.num,th.num{text-align:right;white-space:nowrap}"
    "td{word-break:break-word}p.note{color:#666;font-size:.9em}"
    "figure{margin:.5em 0 1em}svg{max-width:100%;height:auto}";

std::string html_id(const std::string& text) {
  std::string id;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      id += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!id.empty() && id.back() != '-')
      id += '-';
  }
  while (!id.empty() && id.back() == '-') id.pop_back();
  return id;
}

std::string render_html(const Document& doc, const std::string& title) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
      << xml_escape(title) << "</title>\n<style>" << kCss << "</style>\n</head>\n<body>\n";
  for (const Block& b : doc.blocks()) {
    switch (b.kind) {
      case Block::Kind::heading1:
        out << "<h1>" << xml_escape(b.text) << "</h1>\n";
        break;
      case Block::Kind::heading2:
        out << "<h2 id=\"" << xml_escape(html_id(b.text)) << "\">" << xml_escape(b.text)
            << "</h2>\n";
        break;
      case Block::Kind::heading3:
        out << "<h3>" << xml_escape(b.text) << "</h3>\n";
        break;
      case Block::Kind::paragraph:
        out << "<p>" << xml_escape(b.text) << "</p>\n";
        break;
      case Block::Kind::note:
        out << "<p class=\"note\">" << xml_escape(b.text) << "</p>\n";
        break;
      case Block::Kind::bullets:
        out << "<ul>\n";
        for (const auto& item : b.items) out << "<li>" << xml_escape(item) << "</li>\n";
        out << "</ul>\n";
        break;
      case Block::Kind::table: {
        const Table& t = b.table;
        auto cls = [&](size_t i) {
          return i < t.numeric.size() && t.numeric[i] ? " class=\"num\"" : "";
        };
        out << "<table>\n<thead><tr>";
        for (size_t i = 0; i < t.header.size(); ++i)
          out << "<th" << cls(i) << ">" << xml_escape(t.header[i]) << "</th>";
        out << "</tr></thead>\n<tbody>\n";
        for (const auto& row : t.rows) {
          out << "<tr>";
          for (size_t i = 0; i < row.size(); ++i)
            out << "<td" << cls(i) << ">" << xml_escape(row[i]) << "</td>";
          out << "</tr>\n";
        }
        out << "</tbody>\n</table>\n";
        break;
      }
      case Block::Kind::chart:
        out << "<figure>\n" << b.svg << "</figure>\n";
        break;
    }
  }
  out << "</body>\n</html>\n";
  return out.str();
}

// Markdown text: characters that would start markup are backslash-escaped (CommonMark allows a
// backslash before any ASCII punctuation); '_' only at a word boundary, where it could start
// emphasis, so snake_case names stay readable.
std::string md_text(const std::string& text, bool in_table = false) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    auto word = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0; };
    switch (c) {
      case '\\':
      case '`':
      case '*':
      case '[':
      case ']':
      case '<':
      case '>':
      case '&':
      case '|':
        out += '\\';
        out += c;
        break;
      case '_': {
        const bool inner = i > 0 && i + 1 < text.size() && word(text[i - 1]) && word(text[i + 1]);
        if (!inner) out += '\\';
        out += c;
        break;
      }
      case '#':
      case '-':
      case '+':
        if (i == 0 && !in_table) out += '\\';
        out += c;
        break;
      case '\n':
      case '\r':
        out += ' ';
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A relative link target: bytes outside [A-Za-z0-9._~/-] percent-encoded.
std::string url_path(const std::string& path) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (char c : path) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '.' || c == '_' || c == '~' || c == '/' || c == '-') {
      out += c;
    } else {
      out += '%';
      out += hex[u >> 4];
      out += hex[u & 15];
    }
  }
  return out;
}

std::string render_markdown(const Document& doc, const std::string& chart_dir,
                            std::vector<ChartFile>& charts) {
  std::ostringstream out;
  for (const Block& b : doc.blocks()) {
    switch (b.kind) {
      case Block::Kind::heading1:
        out << "# " << md_text(b.text) << "\n\n";
        break;
      case Block::Kind::heading2:
        out << "## " << md_text(b.text) << "\n\n";
        break;
      case Block::Kind::heading3:
        out << "### " << md_text(b.text) << "\n\n";
        break;
      case Block::Kind::paragraph:
        out << md_text(b.text) << "\n\n";
        break;
      case Block::Kind::note:
        out << "*" << md_text(b.text) << "*\n\n";
        break;
      case Block::Kind::bullets:
        for (const auto& item : b.items) out << "- " << md_text(item, true) << "\n";
        out << "\n";
        break;
      case Block::Kind::table: {
        const Table& t = b.table;
        out << "|";
        for (const auto& h : t.header) out << " " << md_text(h, true) << " |";
        out << "\n|";
        for (size_t i = 0; i < t.header.size(); ++i)
          out << (i < t.numeric.size() && t.numeric[i] ? "---:|" : "---|");
        out << "\n";
        for (const auto& row : t.rows) {
          out << "|";
          for (const auto& cell : row) out << " " << md_text(cell, true) << " |";
          out << "\n";
        }
        out << "\n";
        break;
      }
      case Block::Kind::chart: {
        if (chart_dir.empty()) break;  // no place for sidecar files (stdout)
        const std::string path = chart_dir + "/" + b.chart_file;
        charts.push_back({path, b.svg});
        out << "![" << md_text(b.text) << "](" << url_path(path) << ")\n\n";
        break;
      }
    }
  }
  return out.str();
}

// ---- Value formatting -------------------------------------------------------------------------

std::string percent(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f %%", fraction * 100.0);
  return buffer;
}

std::string plain_number(double v) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.4g", v);
  return buffer;
}

// What a null metric needs: its "<name>_needs" sibling.
std::string needs_of(const json& object, const std::string& name) {
  auto it = object.find(name + "_needs");
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string("data");
}

std::string needs_text(const json& object, const std::string& name) {
  return "n/a (needs " + needs_of(object, name) + ")";
}

enum class Unit { duration, fraction, percent_value, bytes, count };

std::string value_text(const json& v, Unit unit) {
  if (v.is_null()) return "n/a";
  switch (unit) {
    case Unit::duration:
      return format_duration(v.get<int64_t>());
    case Unit::fraction:
      return percent(v.get<double>());
    case Unit::percent_value: {
      char buffer[32];
      std::snprintf(buffer, sizeof buffer, "%.1f %%", v.get<double>());
      return buffer;
    }
    case Unit::bytes:
      return format_bytes(v.get<int64_t>());
    case Unit::count:
      return v.is_number_integer() ? std::to_string(v.get<int64_t>())
                                   : plain_number(v.get<double>());
  }
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// object[name] formatted, or "n/a (needs …)" from its "<name>_needs" sibling when null/absent.
std::string metric_text(const json& object, const std::string& name, Unit unit) {
  auto it = object.find(name);
  if (it == object.end() || it->is_null()) return needs_text(object, name);
  return value_text(*it, unit);
}

// How a finding's evidence value reads: by the key's unit suffix.
std::string evidence_value(const std::string& key, const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_null()) return "n/a";
  if (v.is_number()) {
    auto ends = [&](const char* suffix) {
      const std::string s = suffix;
      return key.size() >= s.size() && key.compare(key.size() - s.size(), s.size(), s) == 0;
    };
    if (ends("_ns")) return format_duration(std::llround(v.get<double>()));
    if (ends("_bytes")) return format_bytes(std::llround(v.get<double>()));
    const bool share =
        key.find("share") != std::string::npos || key.find("utilization") != std::string::npos ||
        key.find("fraction") != std::string::npos || key.find("ratio") != std::string::npos;
    if (share && v.get<double>() >= 0.0 && v.get<double>() <= 1.0) return percent(v.get<double>());
    return v.is_number_integer() ? std::to_string(v.get<int64_t>()) : plain_number(v.get<double>());
  }
  std::string text = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return text.size() > 200 ? text.substr(0, 200) + "…" : text;
}

// "idle_after_ns" → "Idle after": the unit suffix goes, the value shows its unit.
std::string humanize(const std::string& key) {
  std::string out = key;
  for (const std::string suffix : {"_ns", "_bytes"})
    if (out.size() > suffix.size() &&
        out.compare(out.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.resize(out.size() - suffix.size());
  std::replace(out.begin(), out.end(), '_', ' ');
  // A sum of possibly overlapping times says so ("summed_delay_ns" → "Summed delay (Σ, not
  // wall time)"): it can exceed the capture.
  if (out.rfind("summed ", 0) == 0) out += " (Σ, not wall time)";
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

std::string shorten(const std::string& text, size_t limit = 160) {
  return text.size() > limit ? text.substr(0, limit) + "…" : text;
}

bool is_window_list(const json& v) {
  if (!v.is_array() || v.empty()) return false;
  return std::all_of(v.begin(), v.end(), [](const json& w) {
    return w.is_array() && w.size() == 2 && w[0].is_number_integer() && w[1].is_number_integer();
  });
}

bool is_object_list(const json& v) {
  return v.is_array() && !v.empty() &&
         std::all_of(v.begin(), v.end(), [](const json& o) { return o.is_object(); });
}

// ---- The report -------------------------------------------------------------------------------

class Builder {
 public:
  Builder(const CaptureData& data, const AnalysisResult& result,
          const ReportDocumentOptions& options)
      : data_(data), result_(result), options_(options), metrics_(metrics_json(data)) {
    if (auto span = data.gpu_span())
      t0_ = span->begin;
    else if (data.capture.start_ns)
      t0_ = *data.capture.start_ns;
  }

  std::string title() const {
    return "fleetscope report — capture " + std::to_string(data_.capture.id);
  }

  Document build() {
    header();
    headline_metrics();
    utilization_charts();
    iterations();
    critical_path();
    launches();
    streams();
    memory();
    findings();
    not_evaluated();
    return std::move(doc_);
  }

 private:
  std::string at(int64_t ns) const { return (ns >= t0_ ? "+" : "") + format_duration(ns - t0_); }
  std::string window(int64_t begin, int64_t end) const {
    return at(begin) + " – " + at(end) + " (" + format_duration(end - begin) + ")";
  }

  void header() {
    doc_.h1(title());
    const json& c = metrics_["capture"];
    std::string source = data_.capture.source_path.empty() ? "unknown" : data_.capture.source_path;
    if (!data_.capture.source.empty()) source += " (" + data_.capture.source + ")";
    std::vector<std::string> items = {
        "Source: " + source, "Capture id: " + std::to_string(data_.capture.id),
        "GPU events: " + std::to_string(data_.gpu.size()) + " on " +
            std::to_string(data_.events_by_device.size()) +
            " device(s); recorded iterations: " + std::to_string(data_.iterations.size())};
    if (auto span = data_.gpu_span())
      items.push_back("GPU activity: " + format_duration(span->length()) +
                      "; times below are relative to the first GPU event (t0)");
    if (c.value("hta_last_step_filter", false))
      items.push_back(
          "HTA metrics (temporal breakdown, comm/comp overlap) leave out GPU work launched in the "
          "last ProfilerStep, as HTA does; everything else uses the whole capture");
    doc_.bullets(items);
  }

  void headline_metrics() {
    doc_.h2("Headline metrics");
    const json& devices = metrics_["devices"];
    if (devices.empty()) {
      doc_.paragraph("No GPU activity in this capture (no kernels, memcpys or memsets).");
      return;
    }
    doc_.note(
        "Per device; every metric is defined in docs/analyzer.md (\"Metrics\"). Shares in "
        "parentheses are of the span.");
    Table t;
    t.header = {"Metric"};
    t.numeric = {false};
    std::vector<std::string> keys;
    for (const auto& [key, d] : devices.items()) {
      keys.push_back(key);
      t.header.push_back("GPU " + key);
      t.numeric.push_back(true);
    }
    auto row = [&](const std::string& label, auto cell) {
      std::vector<std::string> r = {label};
      for (const auto& key : keys) r.push_back(cell(devices[key]));
      t.rows.push_back(std::move(r));
    };
    auto metric = [&](const std::string& label, const std::string& name, Unit unit) {
      row(label, [&](const json& d) { return metric_text(d, name, unit); });
    };
    auto share_of_span = [&](const std::string& label, const std::string& name) {
      row(label, [&](const json& d) {
        const int64_t v = d.value(name, int64_t{0}), span = d.value("span_ns", int64_t{0});
        std::string text = format_duration(v);
        if (span > 0) text += " (" + percent(double(v) / double(span)) + ")";
        return text;
      });
    };
    metric("Span (first to last GPU event)", "span_ns", Unit::duration);
    share_of_span("Busy (kernels, memcpys, memsets)", "gpu_busy_all_ns");
    share_of_span("Busy (kernels)", "gpu_busy_kernels_ns");
    share_of_span("Idle", "gpu_idle_ns");
    metric("Temporal: compute (HTA)", "temporal_compute_fraction", Unit::fraction);
    metric("Temporal: non-compute (HTA)", "temporal_non_compute_fraction", Unit::fraction);
    metric("Temporal: idle (HTA)", "temporal_idle_fraction", Unit::fraction);
    metric("GPU utilization", "gpu_utilization", Unit::fraction);
    metric("Kernel utilization in steps (profiler plugin)", "kernel_utilization_steps",
           Unit::fraction);
    metric("Est. SM efficiency", "est_sm_efficiency", Unit::fraction);
    metric("Est. achieved occupancy", "est_achieved_occupancy", Unit::percent_value);
    for (const char* type : {"compute", "communication", "memory", "other"})
      row(std::string("Kernel time: ") + type, [&](const json& d) {
        return value_text(d["kernel_time_by_type_ns"][type], Unit::duration);
      });
    metric("Comm/comp overlap (HTA)", "comm_comp_overlap", Unit::fraction);
    doc_.table(std::move(t));
  }

  void utilization_charts() {
    doc_.h2("Kernel utilization over time");
    doc_.note(
        "Kernel time in each bucket / bucket length (the PyTorch profiler plugin's timeline): "
        "the device's span (first to last GPU event) cut into buckets of a power-of-ten µs, the "
        "smallest giving at most 100 buckets. Bands: profiler steps; red marks above the plot: "
        "the windows named in the findings' evidence (e.g. the longest gaps).");
    if (data_.events_by_device.empty()) {
      UtilizationChart empty;
      empty.title = "Kernel utilization";
      doc_.chart("Kernel utilization", render_utilization_svg(empty), "gpu-utilization.svg");
      return;
    }
    if (options_.format == DocumentFormat::markdown && options_.chart_dir.empty())
      doc_.note("Charts are written as sidecar SVG files only when the report goes to a file.");
    for (const auto& [device, members] : data_.events_by_device) {
      const UtilizationChart chart = utilization_chart(data_, device, result_.findings);
      doc_.chart(chart.title, render_utilization_svg(chart),
                 "gpu" + std::to_string(device) + "-utilization.svg");
    }
  }

  void iterations() {
    doc_.h2("Iterations");
    const json& rows = metrics_["iterations"];
    if (rows.empty()) {
      doc_.paragraph("No profiler steps (needs " + needs_of(metrics_["capture"], "steps_source") +
                     ").");
      return;
    }
    doc_.note(
        "The profiler plugin's steps (moved to the device side when GPU work was launched inside "
        "them) and its step-time breakdown: each instant is charged to the first active role in "
        "the column order. Steps marked * are left out of the plugin's overview.");
    Table t;
    t.header = {"Step",  "Start",   "Step time",  "Kernel", "Memcpy", "Memset",
                "Comm.", "Runtime", "DataLoader", "CPU op", "Other"};
    t.numeric = {false, true, true, true, true, true, true, true, true, true, true};
    std::vector<StepBreakdown> chart_rows;
    for (const json& it : rows) {
      StepBreakdown b;
      b.step = it["step"].get<int64_t>();
      b.window = {it["start_ns"].get<int64_t>(), it["end_ns"].get<int64_t>()};
      b.in_overview = it["in_overview"].get<bool>();
      b.step_ns = it["step_time_ns"].get<int64_t>();
      b.kernel_ns = it["kernel_ns"].get<int64_t>();
      b.memcpy_ns = it["memcpy_ns"].get<int64_t>();
      b.memset_ns = it["memset_ns"].get<int64_t>();
      b.communication_ns = it["communication_ns"].get<int64_t>();
      b.runtime_ns = it["runtime_ns"].get<int64_t>();
      b.dataloader_ns = it["dataloader_ns"].get<int64_t>();
      b.cpu_op_ns = it["cpu_op_ns"].get<int64_t>();
      b.other_ns = it["other_ns"].get<int64_t>();
      chart_rows.push_back(b);
      if (t.rows.size() >= options_.max_steps) continue;
      t.rows.push_back({"#" + std::to_string(b.step) + (b.in_overview ? "" : "*"),
                        at(b.window.begin), format_duration(b.step_ns),
                        format_duration(b.kernel_ns), format_duration(b.memcpy_ns),
                        format_duration(b.memset_ns), format_duration(b.communication_ns),
                        format_duration(b.runtime_ns), format_duration(b.dataloader_ns),
                        format_duration(b.cpu_op_ns), format_duration(b.other_ns)});
    }
    doc_.table(std::move(t));
    if (rows.size() > options_.max_steps)
      doc_.note("First " + std::to_string(options_.max_steps) + " of " +
                std::to_string(rows.size()) + " steps shown.");
    doc_.chart("Step time breakdown", render_step_breakdown_svg(chart_rows), "steps.svg");
    // The tail, not only the median (step_stats(): recorded iterations, nearest-rank).
    const json& st = metrics_["step_time"];
    if (st.value("count", 0) > 0)
      doc_.paragraph("Step time over " + std::to_string(st["count"].get<int64_t>()) +
                     " recorded steps: p50 " + format_duration(st["p50_ns"].get<int64_t>()) +
                     ", p90 " + format_duration(st["p90_ns"].get<int64_t>()) + ", p99 " +
                     format_duration(st["p99_ns"].get<int64_t>()) + ", jitter (std / mean) " +
                     percent(st["jitter"].get<double>()) + ".");
  }

  // HTA critical_path_analysis of one iteration (critical_path.h): what bounds the step.
  void critical_path() {
    doc_.h2("Critical path");
    const json& cp = metrics_["critical_path"];
    if (cp.is_null()) {
      doc_.paragraph(
          "Not computed: " + metrics_.value("critical_path_needs", std::string("no data")) + ".");
      return;
    }
    doc_.note(
        "HTA critical_path_analysis: the longest chain of CPU operators, CUDA calls, launches, GPU "
        "work and synchronisations through one iteration; each part of it is attributed to the "
        "op or kernel it runs in (docs/analyzer.md, \"Critical path\").");
    const int64_t length = cp["length_ns"].get<int64_t>();
    const int64_t window =
        cp["window_end_ns"].get<int64_t>() - cp["window_start_ns"].get<int64_t>();
    const std::string where = cp["step"].is_null()
                                  ? std::string("The capture")
                                  : "Step #" + std::to_string(cp["step"].get<int64_t>());
    doc_.paragraph(where + " (" + format_duration(window) + "): critical path " +
                   format_duration(length) + ".");
    std::vector<std::pair<std::string, int64_t>> parts;
    for (const char* category : {"cpu_op", "cuda_runtime", "kernel", "copy", "communication",
                                 "launch_delay", "kernel_gap"})
      if (cp["by_category_ns"].contains(category))
        parts.emplace_back(category, cp["by_category_ns"][category].get<int64_t>());
    doc_.chart("Critical path by category",
               render_critical_path_svg(parts, length, "Critical path by category"),
               "critical_path.svg");
    Table t;
    t.header = {"On the path", "Category", "Time", "Share", "If 2x faster: path shorter by"};
    t.numeric = {false, false, true, true, true};
    std::map<std::string, double> shorter;
    for (const json& w : cp["what_if"])
      shorter[w["name"].get<std::string>()] = w["path_shorter_pct"].get<double>();
    for (const json& op : cp["top_ops"]) {
      const std::string name = op["name"].get<std::string>();
      auto what_if = shorter.find(name);
      t.rows.push_back({shorten(name, 80), op["category"].get<std::string>(),
                        format_duration(op["on_path_ns"].get<int64_t>()),
                        percent(op["share"].get<double>()),
                        what_if == shorter.end() ? "-" : percent(what_if->second / 100.0)});
    }
    doc_.table(std::move(t));
  }

  void launches() {
    doc_.h2("Kernel launches");
    const json& l = metrics_["launches"];
    if (l.value("launches", int64_t{0}) == 0) {
      doc_.paragraph("No launches: needs CUDA launch calls correlated with GPU events.");
      return;
    }
    doc_.note(
        "HTA get_cuda_kernel_launch_stats: launch calls joined to their GPU work by "
        "correlation id; launch delay = GPU start − call end. Short kernels: call ≤ " +
        format_duration(l["runtime_cutoff_ns"].get<int64_t>()) +
        " and kernel shorter than its call; delay outliers: delay > " +
        format_duration(l["launch_delay_cutoff_ns"].get<int64_t>()) + ".");
    Table t;
    t.header = {"Launch statistic", "Value"};
    t.numeric = {false, true};
    auto add = [&](const std::string& label, const std::string& name, Unit unit) {
      t.rows.push_back({label, metric_text(l, name, unit)});
    };
    add("Launches", "launches", Unit::count);
    add("Short kernels", "short_kernels", Unit::count);
    add("Short kernels: GPU time", "short_kernel_gpu_ns", Unit::duration);
    add("Short kernels: launch-call time", "short_kernel_cpu_ns", Unit::duration);
    add("Runtime outliers", "runtime_outliers", Unit::count);
    add("Launch delay outliers", "launch_delay_outliers", Unit::count);
    add("Launch delay beyond the cutoff, summed (Σ, not wall time)", "launch_delay_excess_ns",
        Unit::duration);
    add("Launch delay mean (HTA, clipped at 0)", "launch_delay_mean_ns", Unit::duration);
    add("Launch delay p50", "launch_delay_p50_ns", Unit::duration);
    add("Launch delay p95", "launch_delay_p95_ns", Unit::duration);
    add("Launch delay max", "launch_delay_max_ns", Unit::duration);
    doc_.table(std::move(t));
  }

  void streams() {
    doc_.h2("Stream idle time");
    std::vector<json> list(metrics_["streams"].begin(), metrics_["streams"].end());
    if (list.empty()) {
      doc_.paragraph("No GPU streams.");
      return;
    }
    auto total = [](const json& s) {
      return s["idle_host_wait_ns"].get<int64_t>() + s["idle_kernel_wait_ns"].get<int64_t>() +
             s["idle_other_ns"].get<int64_t>();
    };
    std::stable_sort(list.begin(), list.end(),
                     [&](const json& a, const json& b) { return total(a) > total(b); });
    doc_.note(
        "HTA get_idle_time_breakdown: the gap before each event on a stream is host wait "
        "(its launch call started after the previous event ended), kernel wait (gap < " +
        format_duration(list.front()["consecutive_kernel_delay_ns"].get<int64_t>()) +
        ") or other. The streams with the most idle time first.");
    Table t;
    t.header = {"GPU", "Stream", "Host wait", "Kernel wait", "Other", "Total idle"};
    t.numeric = {true, true, true, true, true, true};
    for (size_t i = 0; i < list.size() && i < options_.max_streams; ++i) {
      const json& s = list[i];
      t.rows.push_back(
          {std::to_string(s["device"].get<int64_t>()), std::to_string(s["stream"].get<int64_t>()),
           format_duration(s["idle_host_wait_ns"].get<int64_t>()),
           format_duration(s["idle_kernel_wait_ns"].get<int64_t>()),
           format_duration(s["idle_other_ns"].get<int64_t>()), format_duration(total(s))});
    }
    doc_.table(std::move(t));
    if (list.size() > options_.max_streams)
      doc_.note(std::to_string(list.size() - options_.max_streams) + " more stream(s) not shown.");
  }

  void memory() {
    doc_.h2("Memory");
    Table t;
    t.header = {"GPU", "Peak", "Persistent P", "Ephemeral peak T", "T stddev", "Baseline"};
    t.numeric = {true, true, true, true, true, true};
    std::string unmeasured;
    for (const auto& [key, m] : metrics_["memory"].items()) {
      if (m.value("memory_events", int64_t{0}) == 0) {
        if (unmeasured.empty()) unmeasured = needs_of(m, "peak_bytes");
        continue;
      }
      std::string stddev = "n/a";
      if (!m["ephemeral_peak_stddev_bytes"].is_null())
        stddev = format_bytes(static_cast<int64_t>(m["ephemeral_peak_stddev_bytes"].get<double>()));
      std::string persistent = metric_text(m, "persistent_bytes", Unit::bytes);
      if (m.contains("persistent_bytes_at_least"))
        persistent = "unknown (≥ " + format_bytes(m["persistent_bytes_at_least"].get<int64_t>()) +
                     "; no allocator totals)";
      t.rows.push_back({key, metric_text(m, "peak_bytes", Unit::bytes), persistent,
                        metric_text(m, "ephemeral_peak_bytes", Unit::bytes), stddev,
                        metric_text(m, "baseline_bytes", Unit::bytes)});
    }
    if (t.rows.empty()) {
      doc_.paragraph("Not measured (needs " +
                     (unmeasured.empty() ? std::string(needs::memory_events) : unmeasured) + ").");
      return;
    }
    doc_.note(
        "Allocated memory per device: P = highest level at an iteration start (what the job "
        "keeps), T = highest rise above it within one iteration; the sharer's inputs.");
    doc_.table(std::move(t));
  }

  void findings() {
    std::vector<store::Finding> list = result_.findings;
    std::stable_sort(list.begin(), list.end(),
                     [](const auto& a, const auto& b) { return a.impact_ns > b.impact_ns; });
    doc_.h2("Findings");
    if (result_.source == FindingsSource::stored)
      doc_.note(
          "As stored in the database: the capture has no rows left to analyse, so these are the "
          "findings of an earlier analysis.");
    if (list.empty()) {
      doc_.paragraph("No findings: every evaluated rule found its antipattern absent.");
      return;
    }
    Table summary;
    summary.header = {"Severity", "Rule", "GPU", "Impact", "Window"};
    summary.numeric = {false, false, true, true, false};
    for (const auto& f : list)
      summary.rows.push_back(
          {f.severity, f.rule, f.deviceId ? std::to_string(*f.deviceId) : "all",
           format_duration(f.impact_ns),
           f.window_start && f.window_end ? window(*f.window_start, *f.window_end) : "-"});
    doc_.note(
        "Sorted by impact: the GPU time the fix could recover (an estimate; see each "
        "rule's definition in docs/analyzer.md).");
    doc_.table(std::move(summary));
    for (const auto& f : list) finding(f);
  }

  void finding(const store::Finding& f) {
    doc_.h2(f.rule + " (" + f.severity + ")");
    std::vector<std::string> items;
    items.push_back("Impact: " + format_duration(f.impact_ns) + " of GPU time recoverable");
    items.push_back("GPU: " + (f.deviceId ? std::to_string(*f.deviceId) : std::string("all")));
    if (f.window_start && f.window_end)
      items.push_back("Window: " + window(*f.window_start, *f.window_end));
    json evidence = json::parse(f.evidence_json, nullptr, /*allow_exceptions=*/false);
    if (evidence.is_discarded() || !evidence.is_object()) {
      if (!f.evidence_json.empty() && f.evidence_json != "{}")
        items.push_back("Evidence: " + shorten(f.evidence_json, 400));
      evidence = json::object();
    }
    std::vector<std::pair<std::string, const json*>> tables;
    for (const auto& [key, v] : evidence.items()) {
      if (is_window_list(v)) {
        std::string text;
        size_t n = 0;
        for (const json& w : v) {
          if (n++ == options_.max_windows) break;
          text += (text.empty() ? "" : ", ") + window(w[0].get<int64_t>(), w[1].get<int64_t>());
        }
        if (v.size() > options_.max_windows)
          text += " and " + std::to_string(v.size() - options_.max_windows) + " more";
        items.push_back(humanize(key) + ": " + text);
      } else if (is_object_list(v)) {
        tables.emplace_back(key, &v);
      } else if (v.is_object()) {
        std::string text;
        for (const auto& [k, x] : v.items())
          text += (text.empty() ? "" : ", ") + k + " = " + evidence_value(k, x);
        items.push_back(humanize(key) + ": " + (text.empty() ? "-" : text));
      } else if (v.is_array()) {
        std::string text;
        for (const json& x : v) text += (text.empty() ? "" : ", ") + evidence_value(key, x);
        items.push_back(humanize(key) + ": " + shorten(text, 300));
      } else {
        items.push_back(humanize(key) + ": " + evidence_value(key, v));
      }
    }
    doc_.bullets(std::move(items));
    for (const auto& [key, list] : tables) {
      doc_.h3(humanize(key));
      // Columns as the first row has them, "name" first.
      std::vector<std::string> columns;
      for (const auto& [k, x] : list->front().items())
        if (k == "name")
          columns.insert(columns.begin(), k);
        else
          columns.push_back(k);
      Table t;
      for (const auto& k : columns) {
        t.header.push_back(humanize(k));
        t.numeric.push_back(list->front()[k].is_number());
      }
      size_t n = 0;
      for (const json& o : *list) {
        if (n++ == options_.max_offenders) break;
        std::vector<std::string> r;
        for (const auto& k : columns)
          r.push_back(o.contains(k) ? shorten(evidence_value(k, o[k])) : "");
        t.rows.push_back(std::move(r));
      }
      doc_.table(std::move(t));
      if (list->size() > options_.max_offenders)
        doc_.note(std::to_string(list->size() - options_.max_offenders) + " more not shown.");
    }
    doc_.paragraph("Recommendation: " + f.recommendation);
  }

  void not_evaluated() {
    doc_.h2("Rules not evaluated");
    const auto skipped = result_.not_evaluated();
    if (skipped.empty()) {
      doc_.paragraph("Every selected rule was evaluated (" + std::to_string(result_.rules.size()) +
                     " rules).");
      return;
    }
    doc_.note("The capture lacks the input these rules need; record it to have them checked.");
    Table t;
    t.header = {"Rule", "Needs"};
    for (const RuleOutcome* r : skipped) {
      std::string needs;
      for (const auto& n : r->needs) needs += (needs.empty() ? "" : "; ") + n;
      t.rows.push_back({r->rule, needs});
    }
    doc_.table(std::move(t));
  }

  const CaptureData& data_;
  const AnalysisResult& result_;
  const ReportDocumentOptions& options_;
  json metrics_;
  int64_t t0_ = 0;
  Document doc_;
};

}  // namespace

std::optional<DocumentFormat> document_format_from_string(const std::string& text) {
  if (text == "html" || text == "htm") return DocumentFormat::html;
  if (text == "markdown" || text == "md") return DocumentFormat::markdown;
  return std::nullopt;
}

std::string format_bytes(int64_t bytes) {
  const double v = double(bytes);
  const double a = v < 0 ? -v : v;
  char buffer[48];
  if (a >= double(int64_t{1} << 30))
    std::snprintf(buffer, sizeof buffer, "%.2f GiB", v / double(int64_t{1} << 30));
  else if (a >= double(int64_t{1} << 20))
    std::snprintf(buffer, sizeof buffer, "%.1f MiB", v / double(int64_t{1} << 20));
  else if (a >= 1024.0)
    std::snprintf(buffer, sizeof buffer, "%.1f KiB", v / 1024.0);
  else
    std::snprintf(buffer, sizeof buffer, "%lld B", static_cast<long long>(bytes));
  return buffer;
}

ReportDocument render_report_document(const CaptureData& data, const AnalysisResult& result,
                                      const ReportDocumentOptions& options) {
  Builder builder(data, result, options);
  const Document doc = builder.build();
  ReportDocument out;
  if (options.format == DocumentFormat::html)
    out.text = render_html(doc, builder.title());
  else
    out.text = render_markdown(doc, options.chart_dir, out.charts);
  return out;
}

std::string chart_dir_for(const std::string& report_path) {
  return std::filesystem::path(report_path).stem().string() + "_files";
}

void write_report_document(const std::string& path, const ReportDocument& doc, bool replace) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path base = target.parent_path();
  std::error_code ec;
  if (auto problem = common::output_problem(path))
    throw Error(common::cannot_write(path, *problem));

  std::vector<fs::path> created_dirs;  // chart directories this call created
  std::vector<std::unique_ptr<store::AtomicOutput>> pending;
  std::vector<fs::path> fresh;  // renamed into place where no file was before
  auto prepare = [&](const fs::path& file_path, const std::string& text,
                     store::AtomicOutput::Replace mode = store::AtomicOutput::Replace::yes) {
    pending.push_back(std::make_unique<store::AtomicOutput>(file_path.string(), mode));
    // A new file, never through a link planted under the temporary name (common/new_file.h).
    const int fd = common::create_new_file(pending.back()->temp_path());
    if (fd < 0)
      throw InputError(file_path.string(), "",
                       std::string("cannot create: ") + std::strerror(errno));
    const bool written = common::write_all(fd, text);
    const int error = errno;
    ::close(fd);
    if (!written)
      throw InputError(file_path.string(), "",
                       std::string("write failed: ") + std::strerror(error));
  };
  try {
    for (const ChartFile& chart : doc.charts) {
      const fs::path file_path = base / chart.relative_path;
      const fs::path dir = file_path.parent_path();
      if (!dir.empty() && !fs::is_directory(dir, ec)) {
        if (fs::exists(dir, ec))
          throw InputError(dir.string(), "", "exists and is not a directory");
        const bool made = fs::create_directory(dir, ec);
        if (ec || !made)
          throw InputError(dir.string(), "", "cannot create directory: " + ec.message());
        created_dirs.push_back(dir);
      }
      prepare(file_path, chart.svg);
    }
    prepare(target, doc.text,
            replace ? store::AtomicOutput::Replace::yes : store::AtomicOutput::Replace::no);
    for (auto& output : pending) {
      const bool existed = fs::exists(output->final_path(), ec);
      output->commit();
      if (!existed) fresh.emplace_back(output->final_path());
    }
  } catch (...) {
    pending.clear();  // removes the temporary files not yet renamed
    // Charts renamed into place before the failure go again where they are new (a chart that
    // replaced an earlier one stays: it is complete), then the directories this call created.
    for (const fs::path& file : fresh) fs::remove(file, ec);
    for (const fs::path& dir : created_dirs) fs::remove(dir, ec);
    throw;
  }
}

}  // namespace fleetscope::analyzer
