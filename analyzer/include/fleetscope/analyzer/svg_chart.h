// Small SVG charts for the report (plain text, no library), each a standalone <svg> element that
// can be inlined into HTML or written as a file.
//
// Utilization chart: a step plot of gpu_utilization_timeline() (device_metrics.h: the profiler
// plugin's buckets of a power-of-ten µs, at most 100 of them, each |∪ kernels ∩ bucket| / |bucket|)
// over the device's span (first to last GPU event, CaptureData::device_span). y is 0–100 %, x is
// time since the span start with TimeAxis ticks. Profiler steps are drawn as alternating bands
// behind the plot, finding windows as marks in a strip above it (see utilization_chart()).
//
// Step chart: one horizontal stacked bar per step (step_breakdown(), step_metrics.h), all bars on
// one time scale (the longest step fills the width), parts in the plugin's priority order.
//
// Every text that reaches the SVG goes through xml_escape().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleetscope/analyzer/capture_data.h"
#include "fleetscope/analyzer/device_metrics.h"
#include "fleetscope/analyzer/step_metrics.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::analyzer {

// Escapes & < > " ' for XML and HTML text and attribute values.
std::string xml_escape(const std::string& text);

// A labelled time window drawn on a chart (a profiler step, a finding window).
struct ChartBand {
  Interval window;
  std::string label;
};

// The layout of the utilization chart: the plot area is [left, width − right] ×
// [top, height − bottom] in SVG pixels (y grows downwards, so utilization u is drawn at
// y = height − bottom − u · (height − top − bottom)).
struct ChartLayout {
  int width = 720, height = 180;
  int left = 48, right = 16, top = 28, bottom = 32;
  double plot_x0() const { return left; }
  double plot_x1() const { return width - right; }
  double plot_y0() const { return top; }              // 100 %
  double plot_y1() const { return height - bottom; }  // 0 %
  double y_of(double utilization) const;              // clamped to 0..1
};

struct UtilizationChart {
  std::string title;  // e.g. "GPU 0 utilization (kernels)"
  Interval range;     // the x range (the device span)
  std::vector<UtilizationBucket> buckets;
  std::vector<ChartBand> steps;     // drawn as alternating bands behind the plot
  std::vector<ChartBand> findings;  // drawn as marks above the plot
  // Shown instead of a plot when there are no buckets.
  std::string empty_message = "no GPU activity";
};

// The chart of one device: its span, the timeline buckets, the recorded steps (data.iterations)
// overlapping the span, and the windows of the findings on that device (or on all devices): the
// [start, end] pairs their evidence lists (longest gaps, waits, ...), else the finding's window;
// windows covering 90 % of the span or more are left out (they mark no particular place).
UtilizationChart utilization_chart(const CaptureData& data, int32_t device,
                                   const std::vector<store::Finding>& findings = {});

std::string render_utilization_svg(const UtilizationChart& chart, const ChartLayout& layout = {});

// Step-time breakdown chart; at most `max_steps` bars (the first ones), the title says how many
// were left out. A chart saying "no profiler steps" when `rows` is empty.
std::string render_step_breakdown_svg(const std::vector<StepBreakdown>& rows, size_t max_steps = 40,
                                      int width = 720);

// Critical path chart: one stacked bar of the path's length split into `parts` (critical_path.h's
// categories, in the order given), with a legend; "no critical path" when `length_ns` is 0.
std::string render_critical_path_svg(const std::vector<std::pair<std::string, int64_t>>& parts,
                                     int64_t length_ns, const std::string& title, int width = 720);

}  // namespace fleetscope::analyzer
