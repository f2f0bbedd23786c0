// Opening traces: databases, Kineto JSON imported in memory, and bad input with a message that
// names the file and the problem.
#include "session.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "fleetscope/analyzer/device_metrics.h"
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
  ASSERT_EQ(s->sources().size(), 1u);
  EXPECT_EQ(s->source(0).format, "fleetscope database");
  EXPECT_FALSE(s->source(0).imported);
  ASSERT_EQ(s->captures.size(), 1u);
  EXPECT_EQ(s->captures[0], (CaptureKey{0, f.capture}));
  EXPECT_EQ(s->cache_base(0), dir.file("t.db"));
  EXPECT_EQ(s->title(), "t.db (fleetscope database)");
  EXPECT_EQ(s->capture_label(s->captures[0]), "capture " + std::to_string(f.capture));
}

TEST(Session, KeepsResultsButNotTheCapturesEvents) {
  // The GUI's session keeps no CaptureData (a 10 M-event capture's is about 1.5 GB): the
  // analysis hands its events over once, later calls give the results without them, and
  // loaded() reads them again, with the same candidates.
  test_support::TempDir dir;
  const auto f = testing::write_fixture(dir.file("t.db"));
  auto s = open_session(dir.file("t.db"));
  const CaptureKey key{0, f.capture};
  auto first = s->analysis->analysis(key);
  ASSERT_TRUE(first->data);
  const std::weak_ptr<const analyzer::CaptureData> events = first->data;
  const size_t findings = first->result.findings.size();
  ASSERT_GT(findings, 0u);
  first.reset();
  EXPECT_TRUE(events.expired());  // freed: nothing else holds it
  auto again = s->analysis->analysis(key);
  EXPECT_FALSE(again->data);
  EXPECT_EQ(again->result.findings.size(), findings);
  auto reloaded = s->analysis->loaded(key);
  ASSERT_TRUE(reloaded->data);
  EXPECT_GT(reloaded->data->gpu.size(), 0u);
  EXPECT_EQ(reloaded->candidates.size(), again->candidates.size());
  // The GUI's own analysis keeps only results, the chart's kernel intervals and the path.
  const CaptureAnalysis gui = analyze_capture(*s, key);
  EXPECT_FALSE(gui.analysis->data);
  ASSERT_EQ(gui.kernel_busy.count(0), 1u);
  const analyzer::Interval range{testing::at_us(1000), testing::at_us(2000)};
  const auto kept = analyzer::gpu_utilization_timeline(gui.kernel_busy.at(0), range);
  const auto from_events = analyzer::gpu_utilization_timeline(*reloaded->data, 0, range);
  ASSERT_EQ(kept.size(), from_events.size());
  ASSERT_FALSE(kept.empty());
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(kept[i].bucket, from_events[i].bucket);
    EXPECT_EQ(kept[i].utilization, from_events[i].utilization);
  }
}

TEST(Session, ImportsAKinetoTraceInMemoryAndAnalysesIt) {
  auto s = open_session(sample("hta-critical_path_alexnet_trace.json.gz"));
  EXPECT_EQ(s->source(0).format, "Kineto JSON trace");
  EXPECT_TRUE(s->source(0).imported);
  EXPECT_TRUE(s->cache_base(0).empty());  // nothing is written beside the trace
  ASSERT_EQ(s->captures.size(), 1u);
  auto reader = s->reader();
  EXPECT_GT(reader->query("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
                .rows.at(0)
                .at(0)
                .value_or("0"),
            "0");
  const CaptureAnalysis a = analyze_capture(*s, s->captures[0]);
  EXPECT_FALSE(a.result().rules.empty());
  EXPECT_FALSE(a.devices.empty());
  // Analysed once: the analysis session hands out the same cached result again (without the
  // capture's events, which the GUI does not keep), and the GUI shows the same rules.
  EXPECT_EQ(s->analysis->analysis(s->captures[0]), s->analysis->analysis(s->captures[0]));
  EXPECT_EQ(analyze_capture(*s, s->captures[0]).result().rules.size(), a.result().rules.size());
  const FleetRows fleet = s->analysis->fleet();
  ASSERT_EQ(fleet.size(), 1u);
  EXPECT_EQ(capture_keys(*s, fleet[0]), std::vector<CaptureKey>{s->captures[0]});
  EXPECT_GT(fleet[0].span_ns, 0);
}

TEST(Session, SeveralFilesAndAFolderOpenTogether) {
  test_support::TempDir dir;
  std::filesystem::create_directories(dir.file("ranks"));
  testing::write_fixture(dir.file("ranks/rank0.db"));
  testing::write_fixture(dir.file("ranks/rank1.db"));
  std::ofstream(dir.file("ranks/notes.txt")) << "not a trace, not listed\n";
  auto s = open_session(std::vector<std::string>{
      dir.file("ranks"), sample("hta-critical_path_alexnet_trace.json.gz")});
  ASSERT_EQ(s->sources().size(), 3u);
  EXPECT_EQ(s->source(0).label, "rank0.db");
  EXPECT_EQ(s->source(1).label, "rank1.db");
  EXPECT_EQ(s->source(2).format, "Kineto JSON trace");
  ASSERT_EQ(s->captures.size(), 3u);
  EXPECT_EQ(s->captures[1].source, 1u);
  EXPECT_EQ(s->capture_label(s->captures[1]), "rank1.db · capture 1");
  EXPECT_EQ(s->title().rfind("3 sources: rank0.db, rank1.db, ", 0), 0u) << s->title();
  // The table across them: one row per source.
  const auto summary = source_summaries(*s);
  ASSERT_EQ(summary.size(), 3u);
  EXPECT_EQ(summary[0].captures, 1);
  EXPECT_EQ(summary[0].workflows, 1);
  // The fleet: both ranks' job "train" is one job of two captures, as `fleetscope fleet` merges
  // jobs by name across databases.
  const FleetRows fleet = s->analysis->fleet();
  const auto train =
      std::find_if(fleet.begin(), fleet.end(), [](const auto& w) { return w.workflow == "train"; });
  ASSERT_NE(train, fleet.end());
  EXPECT_EQ(train->captures, 2);
  EXPECT_EQ(capture_keys(*s, *train), (std::vector<CaptureKey>{{0, 1}, {1, 1}}));
  // The most wasteful capture opens first.
  ASSERT_TRUE(most_wasteful_capture(*s, fleet));
  EXPECT_EQ(*most_wasteful_capture(*s, fleet), capture_keys(*s, fleet.front()).front());
  // Two captures of different files compare as `fleetscope diff` does.
  const auto diff = compare_captures(*s, s->captures[0], s->captures[1]);
  EXPECT_EQ(diff.before.kernels, diff.after.kernels);
  EXPECT_GT(diff.before.kernels, 0);
  // An empty folder is an error naming it.
  std::filesystem::create_directories(dir.file("empty"));
  try {
    open_session(std::vector<std::string>{dir.file("empty")});
    ADD_FAILURE() << "an empty folder opened";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(dir.file("empty")), std::string::npos) << e.what();
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
    analyze_capture(*s, s->captures.at(0));
  } catch (const std::exception& e) {
    message = e.what();
  }
  holder.exec("ROLLBACK");
  EXPECT_NE(message.find("locked"), std::string::npos) << message;
}

}  // namespace
}  // namespace fleetscope::gui
