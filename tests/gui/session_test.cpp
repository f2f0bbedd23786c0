// Opening traces: databases, Kineto JSON imported in memory, and bad input with a message that
// names the file and the problem.
#include "session.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>

#include "fleetscope/analyzer/fleet.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/error.h"
#include "gui_fixture.h"
#include "temp_dir.h"

namespace fleetscope::gui {
namespace {

std::string sample(const std::string& name) {
  return std::string(FLEETSCOPE_SOURCE_DIR) + "/samples/traces/" + name;
}

std::string open_error(const std::string& path) {
  try {
    open_session(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Session, OpensADatabase) {
  test_support::TempDir dir;
  const auto f = testing::write_fixture(dir.file("t.db"));
  auto s = open_session(dir.file("t.db"));
  EXPECT_EQ(s->format, "fleetscope database");
  EXPECT_FALSE(s->imported);
  ASSERT_EQ(s->captures.size(), 1u);
  EXPECT_EQ(s->captures[0].id, f.capture);
  EXPECT_EQ(s->cache_base(), dir.file("t.db"));
}

TEST(Session, ImportsAKinetoTraceInMemoryAndAnalysesIt) {
  auto s = open_session(sample("hta-critical_path_alexnet_trace.json.gz"));
  EXPECT_EQ(s->format, "Kineto JSON");
  EXPECT_TRUE(s->imported);
  EXPECT_TRUE(s->cache_base().empty());  // nothing is written beside the trace
  ASSERT_EQ(s->captures.size(), 1u);
  auto reader = s->reader();
  EXPECT_GT(reader->query("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
                .rows.at(0)
                .at(0)
                .value_or("0"),
            "0");
  const SessionAnalysis a = analyze_session(*s);
  ASSERT_EQ(a.captures.size(), 1u);
  EXPECT_FALSE(a.captures[0].result.rules.empty());
  ASSERT_EQ(a.fleet.size(), 1u);
  EXPECT_EQ(a.fleet[0].capture_ids, std::vector<int64_t>{s->captures[0].id});
  EXPECT_GT(a.fleet[0].span_ns, 0);
}

TEST(Session, FleetRowsAgreeWithTheAnalyzersFleetRanking) {
  // The GUI ranks jobs itself only because it also needs their capture ids and must work on
  // in-memory imports; its numbers must stay those of analyzer::rank_workflows.
  test_support::TempDir dir;
  const std::string db = dir.file("fleet.db");
  importers::import_files({sample("hta-critical_path_alexnet_trace.json.gz"),
                           sample("hta-critical_path_simple_add_trace.json.gz")},
                          db);
  const SessionAnalysis mine = analyze_session(*open_session(db));
  const auto reference = analyzer::rank_workflows({db});
  ASSERT_EQ(mine.fleet.size(), reference.size());
  ASSERT_EQ(mine.fleet.size(), 2u);
  for (size_t i = 0; i < reference.size(); ++i) {
    EXPECT_EQ(mine.fleet[i].workflow, reference[i].workflow);
    EXPECT_EQ(mine.fleet[i].span_ns, reference[i].span_ns);
    EXPECT_EQ(mine.fleet[i].busy_ns, reference[i].busy_ns);
    EXPECT_EQ(mine.fleet[i].devices, reference[i].devices);
    EXPECT_EQ(int64_t(mine.fleet[i].capture_ids.size()), reference[i].captures);
    EXPECT_EQ(mine.fleet[i].top_rule, reference[i].top_rule);
  }
}

TEST(Session, BadInputNamesTheFileAndTheProblem) {
  test_support::TempDir dir;
  const std::string text = dir.file("notes.txt");
  std::ofstream(text) << "hello, not a trace\n";
  EXPECT_NE(open_error(text).find(text + ": byte 0: not a trace"), std::string::npos)
      << open_error(text);

  const std::string empty = dir.file("empty.db");
  std::ofstream(empty).close();
  EXPECT_NE(open_error(empty).find(empty), std::string::npos);
  EXPECT_NE(open_error(empty).find("empty"), std::string::npos) << open_error(empty);

  const std::string newer = dir.file("newer.db");
  testing::write_fixture(newer);
  {
    store::Database db = store::Database::open(newer, store::OpenMode::read_write);
    db.exec("UPDATE meta SET value = '99' WHERE key = 'schema_version'");
  }
  EXPECT_NE(open_error(newer).find(newer), std::string::npos);
  EXPECT_NE(open_error(newer).find("99"), std::string::npos) << open_error(newer);

  const std::string corrupt = dir.file("corrupt.db");
  {
    std::ofstream out(corrupt, std::ios::binary);
    out.write("SQLite format 3\0", 16);
    for (int i = 0; i < 4096; ++i) out.put(char(i * 37));
  }
  EXPECT_NE(open_error(corrupt).find(corrupt), std::string::npos) << open_error(corrupt);

  // A Kineto trace cut in the middle.
  const std::string truncated = dir.file("cut.json");
  {
    gzFile in = gzopen(sample("hta-critical_path_simple_add_trace.json.gz").c_str(), "rb");
    ASSERT_TRUE(in);
    std::string json(4096, '\0');
    json.resize(size_t(gzread(in, json.data(), unsigned(json.size()))));
    gzclose(in);
    std::ofstream(truncated) << json.substr(0, json.size() / 2);
  }
  EXPECT_NE(open_error(truncated).find(truncated), std::string::npos) << open_error(truncated);
  EXPECT_NE(open_error(truncated), "(no error)");

  EXPECT_NE(open_error(dir.file("missing.db")).find("missing.db"), std::string::npos);
}

TEST(Session, ALockedDatabaseIsAnErrorNotAHang) {
  test_support::TempDir dir;
  const std::string path = dir.file("locked.db");
  testing::write_fixture(path);
  store::Database holder = store::Database::open(path, store::OpenMode::read_write);
  holder.exec("PRAGMA locking_mode = EXCLUSIVE");
  holder.exec("BEGIN EXCLUSIVE");
  std::string message;
  try {
    auto s = open_session(path);
    analyze_session(*s);
  } catch (const std::exception& e) {
    message = e.what();
  }
  holder.exec("ROLLBACK");
  EXPECT_NE(message.find("locked"), std::string::npos) << message;
}

}  // namespace
}  // namespace fleetscope::gui
