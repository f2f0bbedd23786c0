#include "fleetscope/analyzer/report.h"

#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "fleetscope/analyzer/analysis.h"
#include "shared_case.h"

namespace fleetscope::analyzer {
namespace {

using nlohmann::json;

std::string render(ReportFormat format) {
  auto findings = analyze(testing::shared_case());
  ReportHeader header;
  header.capture_id = 1;
  header.source = "hand.json";
  header.summary_lines = {"GPU 0: span 500 us"};
  std::ostringstream out;
  render_findings(findings, format, header, out);
  return out.str();
}

TEST(Report, FormatNames) {
  EXPECT_EQ(report_format_from_string("table"), ReportFormat::table);
  EXPECT_EQ(report_format_from_string("markdown"), ReportFormat::markdown);
  EXPECT_EQ(report_format_from_string("json"), ReportFormat::json);
  EXPECT_EQ(report_format_from_string("chrome-trace"), ReportFormat::chrome_trace);
  EXPECT_FALSE(report_format_from_string("xml"));
}

TEST(Report, TableListsFindingsByImpactWithAdvice) {
  std::string text = render(ReportFormat::table);
  EXPECT_NE(text.find("capture 1 (hand.json)"), std::string::npos);
  EXPECT_NE(text.find("GPU 0: span 500 us"), std::string::npos);
  auto delay = text.find("launch_delay_outliers");
  auto pageable = text.find("pageable_memcpy");
  ASSERT_NE(delay, std::string::npos);
  ASSERT_NE(pageable, std::string::npos);
  EXPECT_LT(delay, pageable);
  EXPECT_NE(text.find("80.0 us"), std::string::npos);
  EXPECT_NE(text.find("pin_memory"), std::string::npos);
}

TEST(Report, MarkdownHasTableAndEvidence) {
  std::string text = render(ReportFormat::markdown);
  EXPECT_NE(text.find("| Severity | Rule | GPU | Impact | Window |"), std::string::npos);
  EXPECT_NE(text.find("## launch_delay_outliers"), std::string::npos);
  EXPECT_NE(text.find("```json"), std::string::npos);
}

TEST(Report, JsonCarriesParsedEvidence) {
  json doc = json::parse(render(ReportFormat::json));
  EXPECT_EQ(doc["capture_id"], 1);
  ASSERT_EQ(doc["findings"].size(), 2u);
  EXPECT_EQ(doc["findings"][0]["rule"], "launch_delay_outliers");
  EXPECT_EQ(doc["findings"][0]["impact_ns"], 80'000);
  EXPECT_EQ(doc["findings"][0]["evidence"]["delayed_launches"], 1);
  EXPECT_TRUE(doc["findings"][0]["device"].is_null());
  EXPECT_EQ(doc["findings"][1]["device"], 0);
}

TEST(Report, ChromeTraceInstantEventsInMicroseconds) {
  json doc = json::parse(render(ReportFormat::chrome_trace));
  int instants = 0, completes = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "i") {
      ++instants;
      EXPECT_EQ(e["s"], "g");
    }
    if (e["ph"] == "X") ++completes;
    if (e["ph"] == "i" && e["name"] == "pageable_memcpy") {
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), (testing::kSharedBase + 290'000) / 1000.0);
    }
  }
  EXPECT_EQ(instants, 2);
  EXPECT_EQ(completes, 2);
}

TEST(Report, EmptyFindings) {
  std::ostringstream out;
  render_findings({}, ReportFormat::table, ReportHeader{}, out);
  EXPECT_NE(out.str().find("no findings"), std::string::npos);
}

TEST(Report, FormatDuration) {
  EXPECT_EQ(format_duration(999), "999 ns");
  EXPECT_EQ(format_duration(80'000), "80.0 us");
  EXPECT_EQ(format_duration(1'500'000), "1.50 ms");
  EXPECT_EQ(format_duration(2'000'000'000), "2.000 s");
}

}  // namespace
}  // namespace fleetscope::analyzer
