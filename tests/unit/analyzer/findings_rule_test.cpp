// The one rule for stored vs fresh findings (capture_findings(), analysis.h): `analyze`,
// `report`, `fleet` and the analysis session the GUI uses show the same findings for a capture
// whose rows are there — analysed now — whatever an earlier run left in the findings table; only
// a capture with no rows left shows its stored findings, and says so.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "db_fixture.h"
#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/commands.h"
#include "fleetscope/analyzer/fleet.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/analyzer/session.h"
#include "fleetscope/store/capture_rows.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::analyzer {
namespace {

using nlohmann::json;
using RuleImpacts = std::vector<std::pair<std::string, int64_t>>;

struct CommandRun {
  int code;
  std::string out, err;
};

template <class Fn>
CommandRun call(Fn fn, const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = fn(args, out, err);
  return {code, out.str(), err.str()};
}

RuleImpacts sorted(RuleImpacts v) {
  std::sort(v.begin(), v.end());
  return v;
}

RuleImpacts of_json(const json& doc) {
  RuleImpacts out;
  for (const auto& f : doc.at("findings"))
    out.emplace_back(f.at("rule").get<std::string>(), f.at("impact_ns").get<int64_t>());
  return sorted(out);
}

RuleImpacts of_rows(const std::vector<store::Finding>& findings) {
  RuleImpacts out;
  for (const auto& f : findings) out.emplace_back(f.rule, f.impact_ns);
  return sorted(out);
}

// Replaces the capture's stored findings with one the rules would never make on this capture.
store::Finding store_a_different_finding(const std::string& db, int64_t capture) {
  store::Finding f;
  f.rule = "dataloader_bottleneck", f.severity = "high", f.impact_ns = 5;
  f.recommendation = "stored by an earlier run", f.evidence_json = "{}";
  store::Writer writer(store::Database::open(db, store::OpenMode::read_write));
  std::vector<store::Finding> findings{f};
  store_findings(writer, capture, findings);
  writer.finish();
  return findings.front();
}

// What the analysis session (the GUI's) shows for the only capture of `db`.
AnalysisResult session_result(const std::string& db) {
  AnalysisSession session;
  session.open(db);
  const auto refs = session.captures();
  EXPECT_EQ(refs.size(), 1u);
  return session.analysis(refs.at(0).key)->result;
}

class FindingsRule : public ::testing::Test {
 protected:
  void SetUp() override { ids = testing::write_shared_case(db); }
  testing::TempDir dir;
  std::string db = dir.file("t.db");
  testing::FixtureIds ids;
};

TEST_F(FindingsRule, StoredFindingsThatDifferFromAFreshAnalysisAreNotShown) {
  const RuleImpacts fresh =
      of_rows(analyze(load_capture(store::Reader(db), ids.capture)));  // the rules, run here
  ASSERT_FALSE(fresh.empty());
  const store::Finding stored = store_a_different_finding(db, ids.capture);
  ASSERT_NE(of_rows({stored}), fresh);  // the comparison below is not vacuous

  const CommandRun report = call(run_report_command, {db, "--format", "json"});
  ASSERT_EQ(report.code, 0) << report.err;
  const json report_doc = json::parse(report.out);
  EXPECT_EQ(of_json(report_doc), fresh);
  EXPECT_EQ(report_doc.at("findings_source"), "analysed");

  const AnalysisResult session = session_result(db);
  EXPECT_EQ(session.source, FindingsSource::analysed);
  EXPECT_EQ(of_rows(session.findings), fresh);
  EXPECT_FALSE(session.rules.empty());  // analysed: every rule's outcome is there

  // fleet credits the same findings to the job: its top rule is the fresh analysis's.
  const auto ranking = rank_workflows({db});
  ASSERT_EQ(ranking.size(), 1u);
  int64_t total = 0;
  for (const auto& [rule, impact] : fresh) total += impact;
  EXPECT_EQ(ranking[0].findings_impact_ns, total);
  EXPECT_NE(ranking[0].top_rule, stored.rule);

  // `analyze` shows the same and replaces the stored record with it.
  const CommandRun analyzed = call(run_analyze_command, {db, "--format", "json"});
  ASSERT_EQ(analyzed.code, 0) << analyzed.err;
  const json analyze_doc = json::parse(analyzed.out);
  EXPECT_EQ(of_json(analyze_doc), fresh);
  EXPECT_EQ(analyze_doc.at("findings_source"), "analysed");
  EXPECT_EQ(of_rows(store::Reader(db).findings(ids.capture)), fresh);
}

TEST_F(FindingsRule, ACaptureWithNoRowsLeftShowsItsStoredFindingsAndSaysSo) {
  const store::Finding stored = store_a_different_finding(db, ids.capture);
  {
    store::Database database = store::Database::open(db, store::OpenMode::read_write);
    ASSERT_TRUE(store::capture_has_rows(database, ids.capture));
    for (const char* table : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                              "CUPTI_ACTIVITY_KIND_RUNTIME", "iterations", "memory_events"})
      database.exec(std::string("DELETE FROM ") + table);
    ASSERT_FALSE(store::capture_has_rows(database, ids.capture));
  }
  const RuleImpacts expected = of_rows({stored});

  const CommandRun report = call(run_report_command, {db, "--format", "json"});
  ASSERT_EQ(report.code, 0) << report.err;
  const json report_doc = json::parse(report.out);
  EXPECT_EQ(of_json(report_doc), expected);
  EXPECT_EQ(report_doc.at("findings_source"), "stored");

  const CommandRun table = call(run_report_command, {db});
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("findings as stored in the database: the capture has no rows left"),
            std::string::npos)
      << table.out;

  const AnalysisResult session = session_result(db);
  EXPECT_EQ(session.source, FindingsSource::stored);
  EXPECT_EQ(of_rows(session.findings), expected);

  const CommandRun analyzed = call(run_analyze_command, {db, "--format", "json"});
  ASSERT_EQ(analyzed.code, 0) << analyzed.err;
  const json analyze_doc = json::parse(analyzed.out);
  EXPECT_EQ(of_json(analyze_doc), expected);
  EXPECT_EQ(analyze_doc.at("findings_source"), "stored");
  // Shown, not stored again: the row is the one written before.
  const auto rows = store::Reader(db).findings(ids.capture);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].id, stored.id);
  // --rules still selects among them.
  const CommandRun other =
      call(run_report_command, {db, "--format", "json", "--rules", "gpu_idle_gaps"});
  ASSERT_EQ(other.code, 0) << other.err;
  EXPECT_TRUE(json::parse(other.out).at("findings").empty());
}

}  // namespace
}  // namespace fleetscope::analyzer
