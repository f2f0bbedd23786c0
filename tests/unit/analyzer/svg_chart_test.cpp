#include "fleetscope/analyzer/svg_chart.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "capture_builder.h"

namespace fleetscope::analyzer {
namespace {

using testing::CaptureBuilder;
using testing::us;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Tags balance: every <x ...> has its </x> in order; self-closing tags and comments aside.
::testing::AssertionResult well_formed(const std::string& svg) {
  if (svg.rfind("<svg ", 0) != 0) return ::testing::AssertionFailure() << "does not start <svg";
  std::vector<std::string> open;
  const std::regex tag(R"(<(/?)([a-zA-Z][a-zA-Z0-9-]*)[^<>]*?(/?)>)");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tag); it != std::sregex_iterator();
       ++it) {
    const auto& m = *it;
    if (m[3].length()) continue;  // <x/>
    if (m[1].length()) {
      if (open.empty() || open.back() != m[2].str())
        return ::testing::AssertionFailure() << "unbalanced </" << m[2] << ">";
      open.pop_back();
    } else {
      open.push_back(m[2].str());
    }
  }
  if (!open.empty()) return ::testing::AssertionFailure() << "unclosed <" << open.back() << ">";
  // No raw '<' or '&' outside tags and entities.
  const std::string text = std::regex_replace(svg, tag, "");
  if (text.find('<') != std::string::npos || text.find('>') != std::string::npos)
    return ::testing::AssertionFailure() << "stray angle bracket in text";
  if (std::regex_search(text, std::regex(R"(&(?!(amp|lt|gt|quot|#39);))")))
    return ::testing::AssertionFailure() << "unescaped &";
  return ::testing::AssertionSuccess();
}

TEST(SvgChart, XmlEscape) {
  EXPECT_EQ(xml_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(xml_escape("plain µs"), "plain µs");
  EXPECT_EQ(xml_escape(std::string("x\x01y")), "x y");
}

TEST(SvgChart, LayoutMapsUtilizationToRows) {
  const ChartLayout layout;  // plot y from 28 (100 %) to 148 (0 %)
  EXPECT_DOUBLE_EQ(layout.y_of(0.0), 148.0);
  EXPECT_DOUBLE_EQ(layout.y_of(1.0), 28.0);
  EXPECT_DOUBLE_EQ(layout.y_of(0.5), 88.0);
  EXPECT_DOUBLE_EQ(layout.y_of(2.0), 28.0);  // clamped
}

TEST(SvgChart, HalfBusyBucketIsDrawnHalfway) {
  // One bucket at 50 % over the whole range: plot x 48..704, y 148 (0 %) .. 28 (100 %), so the
  // step is the segment (48, 88) → (704, 88), closed down to y 148.
  UtilizationChart chart;
  chart.title = "GPU 0";
  chart.range = {0, us(100)};
  chart.buckets = {{{0, us(100)}, 0.5}};
  const std::string svg = render_utilization_svg(chart);
  EXPECT_TRUE(well_formed(svg));
  EXPECT_NE(svg.find("d=\"M 48 148 L 48 88 L 704 88 L 704 148 Z\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("d=\"M 48 88 L 704 88\""), std::string::npos);
  EXPECT_NE(svg.find("width=\"720\" height=\"180\""), std::string::npos);
  EXPECT_NE(svg.find(">50 %</text>"), std::string::npos);         // y grid label
  EXPECT_NE(svg.find(">0 \xC2\xB5s</text>"), std::string::npos);  // first x tick
  EXPECT_NE(svg.find(">100 \xC2\xB5s</text>"), std::string::npos);
}

TEST(SvgChart, ChartOfACaptureFollowsTheTimeline) {
  // Device span 0..200 µs; buckets are 10^k µs with at most 100 of them, so 20 buckets of
  // 10 µs. Kernels cover 0..100 µs, 105..110 µs and 190..200 µs.
  CaptureBuilder b;
  b.kernel(0, us(100)).kernel(us(105), us(110)).kernel(us(190), us(200), 8);
  b.step(3, 0, us(120)).step(4, us(120), us(200));
  const CaptureData data = b.build();
  store::Finding finding;
  finding.rule = "gpu_idle_gaps";
  finding.severity = "high";
  finding.deviceId = 0;
  finding.window_start = us(110), finding.window_end = us(190);
  const UtilizationChart chart = utilization_chart(data, 0, {finding});
  ASSERT_EQ(chart.buckets.size(), 20u);
  EXPECT_DOUBLE_EQ(chart.buckets[10].utilization, 0.5);  // 100..110 µs: 105..110 busy
  EXPECT_EQ(chart.steps.size(), 2u);
  ASSERT_EQ(chart.findings.size(), 1u);
  const std::string svg = render_utilization_svg(chart);
  EXPECT_TRUE(well_formed(svg));
  // Bucket 10 spans x 48 + 656·100/200 = 376 to 408.8 and sits at y 88.
  EXPECT_NE(svg.find("L 376 88 L 408.8 88"), std::string::npos) << svg;
  EXPECT_NE(svg.find("<title>step 3</title>"), std::string::npos);
  EXPECT_NE(svg.find("gpu_idle_gaps (high)"), std::string::npos);
}

TEST(SvgChart, FindingMarksUseEvidenceWindowsAndSkipWholeSpanOnes) {
  const CaptureData data = CaptureBuilder().kernel(0, us(50)).kernel(us(150), us(200)).build();
  store::Finding gaps;  // evidence names the gap: marked there, not over its whole window
  gaps.rule = "gpu_idle_gaps", gaps.severity = "low", gaps.deviceId = 0;
  gaps.window_start = 0, gaps.window_end = us(200);
  gaps.evidence_json = R"({"longest_gaps": [[50000, 150000]], "count": 1})";
  store::Finding whole;  // its window is the whole span, nothing to mark
  whole.rule = "low_gpu_utilization", whole.severity = "high";
  whole.window_start = 0, whole.window_end = us(200);
  store::Finding other_device = gaps;
  other_device.deviceId = 1;
  const UtilizationChart chart = utilization_chart(data, 0, {gaps, whole, other_device});
  ASSERT_EQ(chart.findings.size(), 1u);
  EXPECT_EQ(chart.findings[0].window, (Interval{us(50), us(150)}));
  EXPECT_EQ(chart.findings[0].label, "gpu_idle_gaps (low): longest_gaps");
}

TEST(SvgChart, EscapesText) {
  UtilizationChart chart;
  chart.title = "GPU <0> & \"friends\"";
  chart.range = {0, us(10)};
  chart.buckets = {{{0, us(10)}, 1.0}};
  chart.steps = {{{0, us(5)}, "step <1> & co"}};
  chart.findings = {{{us(1), us(2)}, "rule<x>&y"}};
  const std::string svg = render_utilization_svg(chart);
  EXPECT_TRUE(well_formed(svg));
  EXPECT_NE(svg.find("GPU &lt;0&gt; &amp; &quot;friends&quot;"), std::string::npos);
  EXPECT_NE(svg.find("step &lt;1&gt; &amp; co"), std::string::npos);
  EXPECT_NE(svg.find("rule&lt;x&gt;&amp;y"), std::string::npos);
  EXPECT_EQ(svg.find("<0>"), std::string::npos);
}

TEST(SvgChart, EmptyDataSaysNoGpuActivity) {
  const CaptureData empty = CaptureBuilder().build();
  const UtilizationChart chart = utilization_chart(empty, 0);
  EXPECT_TRUE(chart.buckets.empty());
  const std::string svg = render_utilization_svg(chart);
  EXPECT_TRUE(well_formed(svg));
  EXPECT_NE(svg.find("no GPU activity"), std::string::npos);
  EXPECT_EQ(svg.find("<path"), std::string::npos);

  EXPECT_TRUE(well_formed(render_utilization_svg(UtilizationChart{})));
  // A device whose span is shorter than one 1 µs bucket has no timeline either.
  const CaptureData tiny = CaptureBuilder().kernel(0, 500).build();
  const std::string short_svg = render_utilization_svg(utilization_chart(tiny, 0));
  EXPECT_TRUE(well_formed(short_svg));
  EXPECT_NE(short_svg.find("too short"), std::string::npos);
}

TEST(SvgChart, StepBreakdownBars) {
  StepBreakdown a;
  a.step = 7;
  a.step_ns = us(100);
  a.kernel_ns = us(60);
  a.other_ns = us(40);
  StepBreakdown b = a;
  b.step = 8;
  b.step_ns = us(50);
  b.kernel_ns = us(25);
  b.dataloader_ns = us(25);
  b.other_ns = 0;
  b.in_overview = false;
  const std::string svg = render_step_breakdown_svg({a, b});
  EXPECT_TRUE(well_formed(svg));
  EXPECT_EQ(count(svg, "<g class=\"step\""), 2u);
  EXPECT_NE(svg.find(">#8*</text>"), std::string::npos);  // left out of the overview
  // Shared scale: the longest step fills 64..704, so step 7's kernel part ends at 64 + 0.6·640.
  EXPECT_NE(svg.find("x=\"64\" y=\"28\" width=\"384\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("DataLoader"), std::string::npos);
  const std::string none = render_step_breakdown_svg({});
  EXPECT_TRUE(well_formed(none));
  EXPECT_NE(none.find("no profiler steps"), std::string::npos);
  std::vector<StepBreakdown> many(50, a);
  const std::string capped = render_step_breakdown_svg(many, 10);
  EXPECT_EQ(count(capped, "<g class=\"step\""), 10u);
  EXPECT_NE(capped.find("first 10 of 50 steps"), std::string::npos);
}

}  // namespace
}  // namespace fleetscope::analyzer
