#include "fleetscope/analyzer/report_document.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "capture_builder.h"
#include "fleetscope/analyzer/svg_chart.h"
#include "fleetscope/store/error.h"
#include "shared_case.h"

namespace fleetscope::analyzer {
namespace {

using testing::CaptureBuilder;
using testing::us;

// The shared hand-computed case (metrics_test.cpp), with the delayed kernel named so that it
// needs escaping. Device 0, µs after kSharedBase:
//   stream 7: gemm 0–100, memcpy HtoD pageable 290–320, "gemm<T&U>" 400–500 (launched 250–255:
//             145 µs launch delay)
//   stream 8: gemm 50–150, add 160–170
//   stream 9: NCCL all-reduce 200–300
// span 500 µs; busy (all) = 0–150 ∪ 160–170 ∪ 200–320 ∪ 400–500 = 380 µs (76.0 %); busy
// (kernels) = 360 µs (72.0 %); idle 120 µs (24.0 %); compute kernels 0–150 ∪ 160–170 ∪ 400–500 =
// 260 µs; communication 100 µs; memory 30 µs; HTA temporal (no steps, so no filter): compute
// 260/500 = 52.0 %, idle 24.0 %, non-compute 24.0 %; comm/comp overlap 0 %. No steps, no CPU ops,
// no SM count: kernel_utilization_steps and est_sm_efficiency are null.
CaptureData report_case() {
  CaptureData data = testing::shared_case("gemm<T&U>");
  data.capture.source_path = "runs/<rank 0> & co.json";
  return data;
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// The table row whose first cell is `label` (HTML).
std::string html_row(const std::string& html, const std::string& label) {
  const auto at = html.find("<tr><td>" + label + "</td>");
  if (at == std::string::npos) return {};
  return html.substr(at, html.find("</tr>", at) - at);
}

TEST(ReportDocument, HtmlHasMetricsChartsFindingsAndNeeds) {
  const CaptureData data = report_case();
  const AnalysisResult result = analyze_capture(data);
  const std::string html = render_report_document(data, result).text;
  ASSERT_TRUE(has(html, "<!DOCTYPE html>"));
  EXPECT_TRUE(has(html, "</html>"));
  // Header.
  EXPECT_TRUE(has(html, "<h1>fleetscope report — capture 1</h1>"));
  EXPECT_TRUE(has(html, "runs/&lt;rank 0&gt; &amp; co.json"));
  // Headline metrics, hand-computed above.
  EXPECT_EQ(html_row(html, "Span (first to last GPU event)"),
            "<tr><td>Span (first to last GPU event)</td><td class=\"num\">500.0 us</td>");
  EXPECT_TRUE(has(html_row(html, "Busy (kernels, memcpys, memsets)"), ">380.0 us (76.0 %)<"));
  EXPECT_TRUE(has(html_row(html, "Busy (kernels)"), ">360.0 us (72.0 %)<"));
  EXPECT_TRUE(has(html_row(html, "Idle"), ">120.0 us (24.0 %)<"));
  EXPECT_TRUE(has(html_row(html, "Temporal: compute (HTA)"), ">52.0 %<"));
  EXPECT_TRUE(has(html_row(html, "Temporal: idle (HTA)"), ">24.0 %<"));
  EXPECT_TRUE(has(html_row(html, "Temporal: non-compute (HTA)"), ">24.0 %<"));
  EXPECT_TRUE(has(html_row(html, "Kernel time: compute"), ">260.0 us<"));
  EXPECT_TRUE(has(html_row(html, "Kernel time: communication"), ">100.0 us<"));
  EXPECT_TRUE(has(html_row(html, "Kernel time: memory"), ">30.0 us<"));
  EXPECT_TRUE(has(html_row(html, "Comm/comp overlap (HTA)"), ">0.0 %<"));
  // Null metrics say what they need.
  EXPECT_TRUE(has(html_row(html, "Kernel utilization in steps (profiler plugin)"),
                  ">n/a (needs ProfilerStep iterations or CPU ops (the steps span))<"));
  EXPECT_TRUE(has(html_row(html, "Est. SM efficiency"), ">n/a (needs "));
  // The utilization chart, inline.
  EXPECT_TRUE(has(html, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_TRUE(has(html, "GPU 0 kernel utilization"));
  // Launches: 5 correlated launches, the 145 µs delay is the max.
  EXPECT_TRUE(has(html_row(html, "Launch delay max"), ">145.0 us<"));
  // Findings, largest impact first, with their recommendation (escaped like every text).
  ASSERT_FALSE(result.findings.empty());
  const auto first = html.find("<h2 id=\"launch-delay-outliers-");
  const auto second = html.find("<h2 id=\"pageable-memcpy-");
  ASSERT_NE(first, std::string::npos);
  ASSERT_NE(second, std::string::npos);
  EXPECT_LT(first, second);
  for (const auto& f : result.findings) {
    EXPECT_TRUE(has(html, ">" + f.rule + "<")) << f.rule;  // summary table
    EXPECT_TRUE(has(html, xml_escape("Recommendation: " + f.recommendation))) << f.rule;
  }
  EXPECT_TRUE(has(html, "<th>Name</th>"));  // top offenders table
  EXPECT_TRUE(has(html, ">gemm&lt;T&amp;U&gt;<"));
  EXPECT_FALSE(has(html, "gemm<T&U>"));
  // Rules not evaluated, with their needs.
  ASSERT_FALSE(result.not_evaluated().empty());
  for (const RuleOutcome* r : result.not_evaluated()) {
    std::string needs;
    for (const auto& n : r->needs) needs += (needs.empty() ? "" : "; ") + n;
    EXPECT_TRUE(has(html, "<tr><td>" + r->rule + "</td><td>" + xml_escape(needs) + "</td></tr>"))
        << r->rule;
  }
  EXPECT_TRUE(has(html, "dataloader_bottleneck"));
  // Order of the sections.
  const std::vector<std::string> order = {"Headline metrics", "Kernel utilization over time",
                                          "Iterations",       "Kernel launches",
                                          "Stream idle time", "Memory",
                                          ">Findings<",       "Rules not evaluated"};
  size_t last = 0;
  for (const auto& section : order) {
    const auto at = html.find(section);
    ASSERT_NE(at, std::string::npos) << section;
    EXPECT_GT(at, last) << section;
    last = at;
  }
}

TEST(ReportDocument, MarkdownLinksSidecarCharts) {
  const CaptureData data = report_case();
  const AnalysisResult result = analyze_capture(data);
  ReportDocumentOptions options;
  options.format = DocumentFormat::markdown;
  options.chart_dir = "my report_files";
  const ReportDocument doc = render_report_document(data, result, options);
  ASSERT_EQ(doc.charts.size(), 1u);  // one device, no steps
  EXPECT_EQ(doc.charts[0].relative_path, "my report_files/gpu0-utilization.svg");
  EXPECT_EQ(doc.charts[0].svg.rfind("<svg ", 0), 0u);
  EXPECT_TRUE(has(doc.text, "](my%20report_files/gpu0-utilization.svg)"));
  EXPECT_EQ(doc.text.rfind("# fleetscope report — capture 1\n", 0), 0u);
  EXPECT_TRUE(has(doc.text, "## launch_delay_outliers ("));
  EXPECT_TRUE(has(doc.text, "| Span (first to last GPU event) | 500.0 us |"));
  EXPECT_TRUE(has(doc.text, "gemm\\<T\\&U\\>"));  // escaped for Markdown
  EXPECT_FALSE(has(doc.text, "<svg"));

  options.chart_dir.clear();  // stdout: no charts
  const ReportDocument plain = render_report_document(data, result, options);
  EXPECT_TRUE(plain.charts.empty());
  EXPECT_FALSE(has(plain.text, "]("));
}

TEST(ReportDocument, StepsMemoryAndEmptyCaptures) {
  CaptureBuilder b;
  b.kernel(us(10), us(60), 7, "gemm", 0, std::make_pair(us(1), us(5)));
  b.kernel(us(110), us(130), 7, "gemm", 0, std::make_pair(us(101), us(105)));
  b.step(1, 0, us(100)).step(2, us(100), us(200));
  CaptureData data = b.build();
  const AnalysisResult result = analyze_capture(data);
  ReportDocumentOptions options;
  options.format = DocumentFormat::markdown;
  options.chart_dir = "r_files";
  const ReportDocument doc = render_report_document(data, result, options);
  // Utilization, steps, and the first step's critical path.
  ASSERT_EQ(doc.charts.size(), 3u);
  EXPECT_EQ(doc.charts[1].relative_path, "r_files/steps.svg");
  EXPECT_EQ(doc.charts[2].relative_path, "r_files/critical_path.svg");
  EXPECT_TRUE(has(doc.text, "## Critical path"));
  EXPECT_TRUE(has(doc.text, "| #1 |"));
  EXPECT_TRUE(has(doc.text, "| #2 |"));
  EXPECT_TRUE(has(doc.text, "Not measured (needs memory events"));

  const CaptureData empty = CaptureBuilder().build();
  const std::string html = render_report_document(empty, analyze_capture(empty)).text;
  EXPECT_TRUE(has(html, "No GPU activity in this capture"));
  EXPECT_TRUE(has(html, "no GPU activity</text>"));
  EXPECT_TRUE(has(html, "</html>"));
}

TEST(ReportDocument, WritesSidecarsThenTheDocument) {
  testing::TempDir dir;
  const std::string path = dir.file("r.md");
  EXPECT_EQ(chart_dir_for(path), "r_files");
  ReportDocument doc;
  doc.text = "# report\n";
  doc.charts = {{"r_files/a.svg", "<svg a/>"}, {"r_files/b.svg", "<svg b/>"}};
  write_report_document(path, doc);
  auto read = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  EXPECT_EQ(read(path), "# report\n");
  EXPECT_EQ(read(dir.file("r_files/b.svg")), "<svg b/>");
  // A chart that cannot be written (its name is a directory): nothing new is left behind.
  const std::string other = dir.file("o.md");
  std::filesystem::create_directories(dir.file("o_files/b.svg"));
  doc.charts = {{"o_files/a.svg", "<svg a/>"}, {"o_files/b.svg", "<svg b/>"}};
  EXPECT_THROW(write_report_document(other, doc), std::exception);
  EXPECT_FALSE(std::filesystem::exists(other));
  EXPECT_FALSE(std::filesystem::exists(dir.file("o_files/a.svg")));
  // A missing parent directory is an error, and creates nothing.
  EXPECT_THROW(write_report_document(dir.file("missing/x.md"), doc), Error);
  EXPECT_FALSE(std::filesystem::exists(dir.file("missing")));
}

}  // namespace
}  // namespace fleetscope::analyzer
