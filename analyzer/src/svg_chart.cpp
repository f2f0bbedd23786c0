#include "fleetscope/analyzer/svg_chart.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fleetscope/analyzer/report.h"
#include "fleetscope/analyzer/time_axis.h"

namespace fleetscope::analyzer {

namespace {

// A pixel coordinate with at most two decimals and no trailing zeros ("88", "48.5").
std::string num(double v) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.2f", v);
  std::string text = buffer;
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  if (text == "-0") text = "0";
  return text;
}

std::string percent_text(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f %%", fraction * 100.0);
  return buffer;
}

void open_svg(std::ostream& out, int width, int height, const std::string& title) {
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height
      << "\" font-family=\"sans-serif\" font-size=\"11\" role=\"img\">\n"
      << "<title>" << xml_escape(title) << "</title>\n"
      << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height
      << "\" fill=\"#ffffff\"/>\n"
      << "<text x=\"8\" y=\"16\" font-size=\"13\" font-weight=\"bold\">" << xml_escape(title)
      << "</text>\n";
}

// x-axis ticks and labels of `axis` under the plot at `y`.
void x_axis(std::ostream& out, const TimeAxis& axis, double y, int max_ticks, int width) {
  out << "<g class=\"x-axis\" stroke=\"#333333\">\n"
      << "<line x1=\"" << num(axis.x0) << "\" y1=\"" << num(y) << "\" x2=\"" << num(axis.x1)
      << "\" y2=\"" << num(y) << "\"/>\n";
  for (const TimeTick& tick : axis.ticks(max_ticks)) {
    out << "<line x1=\"" << num(tick.px) << "\" y1=\"" << num(y) << "\" x2=\"" << num(tick.px)
        << "\" y2=\"" << num(y + 4) << "\"/>\n";
    const char* anchor = tick.px > width - 30 ? "end" : "middle";
    out << "<text x=\"" << num(tick.px) << "\" y=\"" << num(y + 15) << "\" text-anchor=\"" << anchor
        << "\" stroke=\"none\" fill=\"#333333\">" << xml_escape(tick.label) << "</text>\n";
  }
  out << "</g>\n";
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        // Control characters are not allowed in XML 1.0 text; show them as spaces.
        out += (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') ? ' ' : c;
    }
  }
  return out;
}

double ChartLayout::y_of(double utilization) const {
  const double u = std::clamp(utilization, 0.0, 1.0);
  return plot_y1() - u * (plot_y1() - plot_y0());
}

UtilizationChart utilization_chart(const CaptureData& data, int32_t device,
                                   const std::vector<store::Finding>& findings) {
  UtilizationChart chart;
  chart.title = "GPU " + std::to_string(device) + " kernel utilization";
  const auto span = data.device_span(device);
  if (!span || span->empty()) {
    chart.empty_message = "no GPU activity";
    return chart;
  }
  chart.range = *span;
  chart.buckets = gpu_utilization_timeline(data, device, *span);
  if (chart.buckets.empty()) chart.empty_message = "GPU span too short for a timeline (< 1 µs)";
  for (const store::Iteration& it : data.iterations) {
    const Interval w{it.start, it.end};
    if (w.empty() || w.end <= span->begin || w.begin >= span->end) continue;
    const bool duplicate = std::any_of(chart.steps.begin(), chart.steps.end(),
                                       [&](const ChartBand& b) { return b.window == w; });
    if (!duplicate) chart.steps.push_back({w, "step " + std::to_string(it.step)});
  }
  // Finding windows: the sub-windows the evidence names (longest gaps, waits, ...), else the
  // finding's own window; windows spanning most of the chart say nothing about *where* and are
  // left out.
  const auto worth_marking = [&](const Interval& w) {
    return !w.empty() && w.end > span->begin && w.begin < span->end &&
           double(w.length()) < 0.9 * double(span->length());
  };
  for (const store::Finding& f : findings) {
    if (f.deviceId && *f.deviceId != device) continue;
    const std::string label = f.rule + " (" + f.severity + ")";
    bool from_evidence = false;
    const nlohmann::json evidence =
        nlohmann::json::parse(f.evidence_json, nullptr, /*allow_exceptions=*/false);
    if (evidence.is_object()) {
      for (const auto& [key, value] : evidence.items()) {
        if (!value.is_array()) continue;
        for (const auto& w : value) {
          if (!w.is_array() || w.size() != 2 || !w[0].is_number_integer() ||
              !w[1].is_number_integer())
            continue;
          from_evidence = true;
          const Interval window{w[0].get<int64_t>(), w[1].get<int64_t>()};
          if (worth_marking(window)) chart.findings.push_back({window, label + ": " + key});
        }
      }
    }
    if (!from_evidence && f.window_start && f.window_end &&
        worth_marking({*f.window_start, *f.window_end}))
      chart.findings.push_back({{*f.window_start, *f.window_end}, label});
  }
  return chart;
}

std::string render_utilization_svg(const UtilizationChart& chart, const ChartLayout& layout) {
  std::ostringstream out;
  open_svg(out, layout.width, layout.height, chart.title);
  const double x0 = layout.plot_x0(), x1 = layout.plot_x1();
  const double y0 = layout.plot_y0(), y1 = layout.plot_y1();
  out << "<rect class=\"plot\" x=\"" << num(x0) << "\" y=\"" << num(y0) << "\" width=\""
      << num(x1 - x0) << "\" height=\"" << num(y1 - y0)
      << "\" fill=\"none\" stroke=\"#cccccc\"/>\n";
  if (chart.buckets.empty() || chart.range.empty()) {
    out << "<text class=\"empty\" x=\"" << num((x0 + x1) / 2) << "\" y=\"" << num((y0 + y1) / 2)
        << "\" text-anchor=\"middle\" fill=\"#666666\">" << xml_escape(chart.empty_message)
        << "</text>\n</svg>\n";
    return out.str();
  }
  const TimeAxis axis{chart.range.begin, chart.range.end, x0, x1};

  // Profiler steps: alternating bands, labelled when wide enough.
  if (!chart.steps.empty()) {
    out << "<g class=\"steps\">\n";
    for (size_t i = 0; i < chart.steps.size(); ++i) {
      const ChartBand& s = chart.steps[i];
      const double a = axis.to_pixel(s.window.begin), b = axis.to_pixel(s.window.end);
      if (b <= a) continue;
      out << "<rect x=\"" << num(a) << "\" y=\"" << num(y0) << "\" width=\"" << num(b - a)
          << "\" height=\"" << num(y1 - y0) << "\" fill=\"" << (i % 2 ? "#f2f2f2" : "#e6eef7")
          << "\"><title>" << xml_escape(s.label) << "</title></rect>\n";
      out << "<line x1=\"" << num(a) << "\" y1=\"" << num(y0) << "\" x2=\"" << num(a) << "\" y2=\""
          << num(y1) << "\" stroke=\"#9aaabb\" stroke-dasharray=\"2,2\"/>\n";
      if (b - a >= 40)
        out << "<text x=\"" << num(a + 3) << "\" y=\"" << num(y0 + 11)
            << "\" font-size=\"9\" fill=\"#666666\">" << xml_escape(s.label) << "</text>\n";
    }
    out << "</g>\n";
  }

  // y grid and labels.
  out << "<g class=\"y-axis\">\n";
  for (int p = 0; p <= 100; p += 25) {
    const double y = layout.y_of(p / 100.0);
    out << "<line x1=\"" << num(x0) << "\" y1=\"" << num(y) << "\" x2=\"" << num(x1) << "\" y2=\""
        << num(y) << "\" stroke=\"#dddddd\"/>\n"
        << "<text x=\"" << num(x0 - 4) << "\" y=\"" << num(y + 4)
        << "\" text-anchor=\"end\" fill=\"#333333\">" << p << " %</text>\n";
  }
  out << "<text x=\"12\" y=\"" << num((y0 + y1) / 2)
      << "\" text-anchor=\"middle\" transform=\"rotate(-90 12 " << num((y0 + y1) / 2)
      << ")\" fill=\"#333333\">utilization</text>\n</g>\n";

  // The step plot: each bucket a flat segment at its utilization.
  std::ostringstream area, line;
  const auto& first = chart.buckets.front();
  area << "M " << num(axis.to_pixel(first.bucket.begin)) << " " << num(y1);
  for (size_t i = 0; i < chart.buckets.size(); ++i) {
    const UtilizationBucket& b = chart.buckets[i];
    const std::string xa = num(axis.to_pixel(b.bucket.begin)),
                      xb = num(axis.to_pixel(b.bucket.end));
    const std::string y = num(layout.y_of(b.utilization));
    area << " L " << xa << " " << y << " L " << xb << " " << y;
    line << (i == 0 ? "M " : " L ") << xa << " " << y << " L " << xb << " " << y;
  }
  area << " L " << num(axis.to_pixel(chart.buckets.back().bucket.end)) << " " << num(y1) << " Z";
  out << "<path class=\"utilization-area\" d=\"" << area.str()
      << "\" fill=\"#4c78a8\" fill-opacity=\"0.35\" stroke=\"none\"/>\n"
      << "<path class=\"utilization-line\" d=\"" << line.str()
      << "\" fill=\"none\" stroke=\"#4c78a8\" stroke-width=\"1.2\"/>\n";
  // Bucket values as tooltips (invisible hit areas).
  out << "<g class=\"buckets\" fill-opacity=\"0\">\n";
  for (const UtilizationBucket& b : chart.buckets) {
    const double a = axis.to_pixel(b.bucket.begin), e = axis.to_pixel(b.bucket.end);
    out << "<rect x=\"" << num(a) << "\" y=\"" << num(y0) << "\" width=\""
        << num(std::max(e - a, 0.0)) << "\" height=\"" << num(y1 - y0) << "\"><title>"
        << xml_escape(axis.label(b.bucket.begin - chart.range.begin, 3) + ": " +
                      percent_text(b.utilization))
        << "</title></rect>\n";
  }
  out << "</g>\n";

  // Finding windows: marks in a strip just above the plot.
  if (!chart.findings.empty()) {
    out << "<g class=\"findings\" fill=\"#d62728\" fill-opacity=\"0.45\">\n";
    for (const ChartBand& f : chart.findings) {
      if (f.window.end < chart.range.begin || f.window.begin > chart.range.end) continue;
      const double a = axis.to_pixel(f.window.begin), b = axis.to_pixel(f.window.end);
      out << "<rect x=\"" << num(a) << "\" y=\"" << num(y0 - 7) << "\" width=\""
          << num(std::max(b - a, 2.0)) << "\" height=\"5\"><title>" << xml_escape(f.label)
          << "</title></rect>\n";
    }
    out << "</g>\n";
  }

  x_axis(out, axis, y1, 8, layout.width);
  out << "<text x=\"" << num((x0 + x1) / 2) << "\" y=\"" << layout.height - 3
      << "\" text-anchor=\"middle\" fill=\"#333333\">time since the device's first GPU event ("
      << xml_escape(format_duration(chart.range.length())) << " span)</text>\n";
  out << "</svg>\n";
  return out.str();
}

std::string render_step_breakdown_svg(const std::vector<StepBreakdown>& rows, size_t max_steps,
                                      int width) {
  struct Part {
    const char* name;
    const char* color;
    int64_t StepBreakdown::*field;
  };
  static const Part parts[] = {{"kernel", "#4c78a8", &StepBreakdown::kernel_ns},
                               {"memcpy", "#f58518", &StepBreakdown::memcpy_ns},
                               {"memset", "#e45756", &StepBreakdown::memset_ns},
                               {"communication", "#72b7b2", &StepBreakdown::communication_ns},
                               {"runtime", "#54a24b", &StepBreakdown::runtime_ns},
                               {"DataLoader", "#eeca3b", &StepBreakdown::dataloader_ns},
                               {"CPU op", "#b279a2", &StepBreakdown::cpu_op_ns},
                               {"other", "#bab0ac", &StepBreakdown::other_ns}};
  const size_t shown = std::min(rows.size(), max_steps);
  const int left = 64, right = 16, top = 28, row = 18, bar = 13;
  const int height = top + int(std::max<size_t>(shown, 1)) * row + 44;
  std::string title = "Step time breakdown";
  if (shown < rows.size())
    title += " (first " + std::to_string(shown) + " of " + std::to_string(rows.size()) + " steps)";
  std::ostringstream out;
  open_svg(out, width, height, title);
  if (rows.empty()) {
    out << "<text class=\"empty\" x=\"" << width / 2 << "\" y=\"" << top + row / 2 + 4
        << "\" text-anchor=\"middle\" fill=\"#666666\">no profiler steps</text>\n</svg>\n";
    return out.str();
  }
  int64_t longest = 0;
  for (size_t i = 0; i < shown; ++i) longest = std::max(longest, rows[i].step_ns);
  const TimeAxis axis{0, std::max<int64_t>(longest, 1), double(left), double(width - right)};
  for (size_t i = 0; i < shown; ++i) {
    const StepBreakdown& s = rows[i];
    const double y = top + double(i) * row;
    out << "<g class=\"step\"" << (s.in_overview ? "" : " opacity=\"0.5\"") << ">\n"
        << "<text x=\"" << left - 4 << "\" y=\"" << num(y + bar - 2)
        << "\" text-anchor=\"end\" fill=\"#333333\">#" << s.step << (s.in_overview ? "" : "*")
        << "</text>\n";
    int64_t offset = 0;
    for (const Part& p : parts) {
      const int64_t v = s.*(p.field);
      if (v <= 0) continue;
      const double a = axis.to_pixel(offset), b = axis.to_pixel(offset + v);
      offset += v;
      out << "<rect x=\"" << num(a) << "\" y=\"" << num(y) << "\" width=\"" << num(b - a)
          << "\" height=\"" << bar << "\" fill=\"" << p.color << "\"><title>"
          << xml_escape("step " + std::to_string(s.step) + ": " + p.name + " " +
                        format_duration(v) + " of " + format_duration(s.step_ns))
          << "</title></rect>\n";
    }
    out << "</g>\n";
  }
  const double axis_y = top + double(shown) * row + 2;
  x_axis(out, axis, axis_y, 8, width);
  double x = left;
  const double legend_y = axis_y + 32;
  out << "<g class=\"legend\">\n";
  for (const Part& p : parts) {
    out << "<rect x=\"" << num(x) << "\" y=\"" << num(legend_y - 9)
        << "\" width=\"10\" height=\"10\" fill=\"" << p.color << "\"/><text x=\"" << num(x + 13)
        << "\" y=\"" << num(legend_y) << "\" fill=\"#333333\">" << p.name << "</text>\n";
    x += 24 + 7.0 * double(std::string(p.name).size());
  }
  out << "</g>\n</svg>\n";
  return out.str();
}

std::string render_critical_path_svg(const std::vector<std::pair<std::string, int64_t>>& parts,
                                     int64_t length_ns, const std::string& title, int width) {
  // The finer categories of critical_path.h, CPU first, then the GPU's work, then its idle time.
  static const std::map<std::string, const char*> colors = {
      {"cpu_op", "#b279a2"},    {"cuda_runtime", "#54a24b"},  {"kernel", "#4c78a8"},
      {"copy", "#f58518"},      {"communication", "#72b7b2"}, {"launch_delay", "#e45756"},
      {"kernel_gap", "#bab0ac"}};
  const int left = 16, right = 16, top = 28, bar = 18;
  const int height = top + bar + 40 + 20;
  std::ostringstream out;
  open_svg(out, width, height, title);
  if (length_ns <= 0) {
    out << "<text class=\"empty\" x=\"" << width / 2 << "\" y=\"" << top + bar / 2 + 4
        << "\" text-anchor=\"middle\" fill=\"#666666\">no critical path</text>\n</svg>\n";
    return out.str();
  }
  const TimeAxis axis{0, length_ns, double(left), double(width - right)};
  int64_t offset = 0;
  for (const auto& [name, ns] : parts) {
    if (ns <= 0) continue;
    const auto color = colors.find(name);
    const double a = axis.to_pixel(offset), b = axis.to_pixel(offset + ns);
    offset += ns;
    out << "<rect x=\"" << num(a) << "\" y=\"" << top << "\" width=\"" << num(b - a)
        << "\" height=\"" << bar << "\" fill=\""
        << (color != colors.end() ? color->second : "#999999") << "\"><title>"
        << xml_escape(name + " " + format_duration(ns) + " of " + format_duration(length_ns))
        << "</title></rect>\n";
  }
  x_axis(out, axis, top + bar + 2, 8, width);
  double x = left;
  const double legend_y = top + bar + 46;
  out << "<g class=\"legend\">\n";
  for (const auto& [name, ns] : parts) {
    if (ns <= 0) continue;
    const auto color = colors.find(name);
    out << "<rect x=\"" << num(x) << "\" y=\"" << num(legend_y - 9)
        << "\" width=\"10\" height=\"10\" fill=\""
        << (color != colors.end() ? color->second : "#999999") << "\"/><text x=\"" << num(x + 13)
        << "\" y=\"" << num(legend_y) << "\" fill=\"#333333\">" << xml_escape(name) << "</text>\n";
    x += 24 + 7.0 * double(name.size());
  }
  out << "</g>\n</svg>\n";
  return out.str();
}

}  // namespace fleetscope::analyzer
