// The analysis cache (analysis_cache.h): a stored analysis is read back only under the key it was
// made under (the capture's rows, the rules, the thresholds, the analyzer build); anything else is
// analysed again, so the cache never changes what a command shows.
#include "fleetscope/analyzer/analysis_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <utility>

#include "db_fixture.h"
#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/commands.h"
#include "fleetscope/analyzer/fleet.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/store/capture_rows.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::analyzer {
namespace {

using RuleImpacts = std::vector<std::pair<std::string, int64_t>>;

RuleImpacts of(const std::vector<store::Finding>& findings) {
  RuleImpacts out;
  for (const auto& f : findings) out.emplace_back(f.rule, f.impact_ns);
  std::sort(out.begin(), out.end());
  return out;
}

class AnalysisCache : public ::testing::Test {
 protected:
  void SetUp() override { ids = testing::write_shared_case(db); }

  // `fleetscope analyze DB` (stores the analysis under its key), with extra arguments.
  void analyze_and_store(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{db};
    args.insert(args.end(), extra.begin(), extra.end());
    std::ostringstream out, err;
    ASSERT_EQ(run_analyze_command(args, out, err), 0) << err.str();
  }
  // The one rule, as `fleet` asks it (nothing loaded unless the cache misses).
  AnalysisResult lazy(const AnalyzeOptions& options = {}) {
    return capture_findings(store::Reader(db), ids.capture, options);
  }
  // What the rules give on the rows now, without any cache.
  RuleImpacts fresh(const AnalyzeOptions& options = {}) {
    return of(analyze_capture(load_capture(store::Reader(db), ids.capture), options).findings);
  }
  void exec(const std::string& sql) {
    store::Database::open(db, store::OpenMode::read_write).exec(sql);
  }

  ::fleetscope::analyzer::testing::TempDir dir;
  std::string db = dir.file("t.db");
  testing::FixtureIds ids;
};

TEST_F(AnalysisCache, AStoredAnalysisIsReadBackUnderTheSameKey) {
  ASSERT_FALSE(lazy().from_cache) << "nothing stored yet";
  analyze_and_store();
  const AnalysisResult hit = lazy();
  EXPECT_TRUE(hit.from_cache);
  EXPECT_EQ(hit.source, FindingsSource::analysed);
  ASSERT_FALSE(hit.findings.empty());
  EXPECT_EQ(of(hit.findings), fresh());
  // Every rule's outcome comes back too (what analyze and report print under the findings).
  const AnalysisResult now = analyze_capture(load_capture(store::Reader(db), ids.capture));
  ASSERT_EQ(hit.rules.size(), now.rules.size());
  for (size_t i = 0; i < now.rules.size(); ++i) {
    EXPECT_EQ(hit.rules[i].rule, now.rules[i].rule);
    EXPECT_EQ(hit.rules[i].evaluated, now.rules[i].evaluated) << now.rules[i].rule;
    EXPECT_EQ(hit.rules[i].needs, now.rules[i].needs) << now.rules[i].rule;
    EXPECT_EQ(hit.rules[i].findings, now.rules[i].findings) << now.rules[i].rule;
  }
  // The loaded form (analyze, report, the GUI, the daemon) finds the same entry.
  store::Reader reader(db);
  EXPECT_TRUE(capture_findings(load_capture(reader, ids.capture), &reader).from_cache);
  // And fleet credits the same impact as when it analysed.
  int64_t total = 0;
  for (const auto& [rule, impact] : fresh()) total += impact;
  const auto ranking = rank_workflows({db});
  ASSERT_EQ(ranking.size(), 1u);
  EXPECT_EQ(ranking[0].findings_impact_ns, total);
}

TEST_F(AnalysisCache, RowsAddedOrDeletedMiss) {
  analyze_and_store();
  ASSERT_TRUE(lazy().from_cache);
  {
    // One more long kernel in the capture: the rows are not the ones analysed.
    store::Writer writer(store::Database::open(db, store::OpenMode::read_write));
    store::Kernel k;
    k.captureId = ids.capture;
    k.start = testing::kBase + 900'000, k.end = testing::kBase + 950'000;
    k.deviceId = 0, k.streamId = 7, k.globalPid = store::global_pid(testing::kPid);
    k.demangledName = k.shortName = "late_kernel";
    writer.add(k);
    writer.finish();
  }
  const AnalysisResult added = lazy();
  EXPECT_FALSE(added.from_cache);
  EXPECT_EQ(of(added.findings), fresh());

  analyze_and_store();
  ASSERT_TRUE(lazy().from_cache);
  exec(
      "DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE rowid = (SELECT min(rowid) FROM "
      "CUPTI_ACTIVITY_KIND_RUNTIME)");
  EXPECT_FALSE(lazy().from_cache);

  analyze_and_store();
  ASSERT_TRUE(lazy().from_cache);
  // A step replaced in place (iterations are upserted: same count, same key columns).
  exec(
      "UPDATE iterations SET \"end\" = \"end\" + 1000 WHERE rowid = (SELECT max(rowid) FROM "
      "iterations)");
  EXPECT_FALSE(lazy().from_cache);
}

TEST_F(AnalysisCache, OtherRulesOrThresholdsMiss) {
  analyze_and_store();
  ASSERT_TRUE(lazy().from_cache);

  AnalyzeOptions subset;
  subset.rules = {"pageable_memcpy"};
  const AnalysisResult one_rule = lazy(subset);
  EXPECT_FALSE(one_rule.from_cache);
  EXPECT_EQ(of(one_rule.findings), fresh(subset));
  ASSERT_EQ(one_rule.rules.size(), 1u);

  AnalyzeOptions quiet;
  quiet.thresholds["pageable_memcpy.min_count"] = 1000;
  const AnalysisResult thresholds = lazy(quiet);
  EXPECT_FALSE(thresholds.from_cache);
  EXPECT_EQ(of(thresholds.findings), fresh(quiet));
  EXPECT_NE(of(thresholds.findings), fresh()) << "the threshold changes the findings";

  // Stored with that threshold, it hits with it and misses without it.
  analyze_and_store({"--set", "pageable_memcpy.min_count=1000"});
  EXPECT_TRUE(lazy(quiet).from_cache);
  EXPECT_EQ(of(lazy(quiet).findings), fresh(quiet));
  EXPECT_FALSE(lazy().from_cache);
  EXPECT_EQ(of(lazy().findings), fresh());
}

TEST_F(AnalysisCache, AnotherAnalyzerBuildMisses) {
  analyze_and_store();
  ASSERT_TRUE(lazy().from_cache);
  // The entry as an analyzer built from other sources would have filed it.
  const std::string own = std::string("analyzer=") + analyzer_build_hash();
  exec("UPDATE meta SET value = replace(value, '" + own + "', 'analyzer=0123456789abcdef') " +
       "WHERE key = '" + analysis_meta_key(ids.capture) + "'");
  EXPECT_FALSE(lazy().from_cache);
  EXPECT_EQ(of(lazy().findings), fresh());
}

TEST_F(AnalysisCache, FilesWithoutAKeyOrWithADamagedOneAreAnalysed) {
  // Findings stored without a key (by an earlier fleetscope, or store_findings): never read while
  // the rows are there, even when they differ from what the rules give.
  store::Finding planted;
  planted.rule = "dataloader_bottleneck", planted.severity = "high", planted.impact_ns = 5;
  planted.recommendation = "stored by an earlier run", planted.evidence_json = "{}";
  {
    store::Writer writer(store::Database::open(db, store::OpenMode::read_write));
    std::vector<store::Finding> findings{planted};
    store_findings(writer, ids.capture, findings);
    writer.finish();
  }
  EXPECT_FALSE(lazy().from_cache);
  EXPECT_EQ(of(lazy().findings), fresh());
  EXPECT_NE(of({planted}), fresh());

  // store_findings after store_analysis removes the entry: the new findings are under no key.
  analyze_and_store();
  ASSERT_TRUE(lazy().from_cache);
  {
    store::Writer writer(store::Database::open(db, store::OpenMode::read_write));
    std::vector<store::Finding> findings{planted};
    store_findings(writer, ids.capture, findings);
    writer.finish();
  }
  EXPECT_FALSE(lazy().from_cache);
  EXPECT_EQ(of(lazy().findings), fresh());

  // A damaged entry, and findings deleted under an intact one: analysed, no error.
  analyze_and_store();
  exec("DELETE FROM findings WHERE id = (SELECT min(id) FROM findings)");
  EXPECT_FALSE(lazy().from_cache);
  EXPECT_EQ(of(lazy().findings), fresh());
  for (const char* value : {"not json", "[]", "{\"key\": 5}", "{\"key\": \"x\"}"}) {
    exec(std::string("UPDATE meta SET value = '") + value + "' WHERE key = '" +
         analysis_meta_key(ids.capture) + "'");
    EXPECT_FALSE(lazy().from_cache) << value;
    EXPECT_EQ(of(lazy().findings), fresh()) << value;
  }
}

TEST_F(AnalysisCache, TheRowsKeyChangesWithTheRowsNotWithReading) {
  store::Database database = store::Database::open(db, store::OpenMode::read_write);
  const std::string key = store::capture_rows_key(database, ids.capture);
  EXPECT_EQ(store::capture_rows_key(database, ids.capture), key);
  EXPECT_NE(key.find("CUPTI_ACTIVITY_KIND_KERNEL="), std::string::npos) << key;
  database.exec("UPDATE processes SET workflow_id = NULL");  // the attribution repaired, say
  EXPECT_NE(store::capture_rows_key(database, ids.capture), key);
}

}  // namespace
}  // namespace fleetscope::analyzer
