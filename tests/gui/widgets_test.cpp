// Offscreen widget tests: they assert structure (pixels at computed positions, tracks, view
// ranges, table contents against SQL), not screenshots.
#include <gtest/gtest.h>

#include <QApplication>
#include <QChart>
#include <QCheckBox>
#include <QComboBox>
#include <QDropEvent>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <QUrl>
#include <QValueAxis>
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <sqlite3.h>

#include "aggregate.h"
#include "capture_view.h"
#include "colors.h"
#include "event_details.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/reader.h"
#include "gui_fixture.h"
#include "main_window.h"
#include "panels.h"
#include "run_gui.h"
#include "session.h"
#include "temp_dir.h"
#include "timeline_widget.h"

namespace fleetscope::gui {
namespace {

using testing::at_us;

std::string sample(const std::string& name) {
  return std::string(FLEETSCOPE_SOURCE_DIR) + "/samples/traces/" + name;
}

size_t stream_track(const TimelineData& data, int32_t stream) {
  for (size_t t = 0; t < data.tracks.size(); ++t)
    if (data.tracks[t].key.kind == TrackKind::gpu_stream && data.tracks[t].key.stream == stream)
      return t;
  ADD_FAILURE() << "no stream " << stream;
  return 0;
}

class WidgetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("trace.db");
    fixture_ = testing::write_fixture(path_);
  }
  test_support::TempDir dir_;
  std::string path_;
  testing::Fixture fixture_;
};

TEST_F(WidgetsTest, TimelinePaintsAKnownKernelAtItsComputedX) {
  store::Reader reader(path_);
  auto data = std::make_shared<TimelineData>(load_timeline(reader, fixture_.capture));
  TimelineWidget w;
  w.resize(1200, 300);
  w.set_timeline(data);
  w.show_range({at_us(900), at_us(1700)});
  const QImage image = w.grab().toImage();
  const size_t s7 = stream_track(*data, 7);
  const int y = w.row_top(s7) + TimelineWidget::row_height / 2;
  // Inside gemm [1000, 1400) µs, away from its label text: its colour.
  const QRgb gemm = event_color(EventKind::kernel, "gemm").rgb();
  const int x_in = int(w.x_of(at_us(1380)));
  EXPECT_EQ(image.pixel(x_in, y), gemm) << x_in << "," << y;
  // In the idle gap after it: not gemm's colour.
  EXPECT_NE(image.pixel(int(w.x_of(at_us(1500))), y), gemm);
  // relu on stream 13 at [1450, 1550).
  const int y13 = w.row_top(stream_track(*data, 13)) + TimelineWidget::row_height / 2;
  const QRgb relu = event_color(EventKind::kernel, "relu").rgb();
  EXPECT_EQ(image.pixel(int(w.x_of(at_us(1540))), y13), relu);
  EXPECT_NE(image.pixel(int(w.x_of(at_us(1540))), y), relu);
}

TEST_F(WidgetsTest, AFirstPartHatchesWhatIsLoadingAndTheWholeKeepsTheView) {
  store::Reader reader(path_);
  auto head = load_timeline_head(reader, fixture_.capture, 5);
  ASSERT_TRUE(head);
  auto part = std::make_shared<TimelineData>(std::move(*head));
  auto whole = std::make_shared<TimelineData>(load_timeline(reader, fixture_.capture));
  TimelineWidget w;
  w.resize(1200, 600);  // taller than the tracks: an empty band at the bottom
  w.set_timeline(part);
  // The whole capture is in view, not only the part.
  EXPECT_EQ(w.view().visible(), whole->span);
  // Along the empty bottom band past the cut: the hatch's dark strokes on the light background.
  const int y = w.height() - 4;
  auto dark_pixels = [&](const QImage& image, int x0, int x1) {
    int dark = 0;
    for (int x = x0; x < x1; ++x) dark += qGray(image.pixel(x, y)) < 200;
    return dark;
  };
  const int cut_x = int(w.x_of(part->loaded_until));
  const int right = int(w.x_of(whole->span.end)) - 2;
  ASSERT_GT(right - cut_x, 40);
  // (Only the step lines cross the band elsewhere: a pixel each.)
  const int hatched = dark_pixels(w.grab().toImage(), cut_x + 2, right);
  EXPECT_GT(hatched, (right - cut_x) / 20);
  const int left = int(w.x_of(whole->span.begin)) + 2;
  EXPECT_LT(dark_pixels(w.grab().toImage(), left, cut_x - 2), (cut_x - 2 - left) / 20);
  // Zoomed in and an event selected while the rest loads: both stay when the whole arrives.
  const size_t s7 = stream_track(*part, 7);
  const TimeRange zoomed{part->span.begin, part->loaded_until};
  w.show_range(zoomed);
  w.select_event(s7, 0);
  w.set_timeline(whole);
  EXPECT_EQ(w.view().visible(), zoomed);
  ASSERT_TRUE(w.selected_event());
  EXPECT_EQ(*w.selected_event(), (std::pair<size_t, int64_t>{stream_track(*whole, 7), 0}));
  // Everything loaded: no hatch.
  w.show_range(whole->span);
  EXPECT_LT(dark_pixels(w.grab().toImage(), cut_x + 2, right), hatched / 3);
}

TEST_F(WidgetsTest, SharingPanelListsTheSharingEventsUnderThePlans) {
  testing::write_sharing_records(
      path_, {.created_ns = 10, .policy = "fifo", .plan_json = "{}", .applied = true},
      {{20, testing::kThisPlan, "job_admitted", R"({"pid":7,"workflow":"train","lane":"l0"})"},
       {30, testing::kThisPlan, "job_released", R"({"pid":7,"workflow":"train","lane":"l0"})"}});
  MainWindow window(false);
  window.open(QString::fromStdString(path_));
  window.show_view("sharing");  // the plan is made when the tab is shown
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  const SharingEventsModel* events = window.sharing_panel()->events_model();
  ASSERT_EQ(events->rowCount(), 2);
  EXPECT_EQ(events->index(0, SharingEventsModel::kind).data().toString(), "job_admitted");
  EXPECT_EQ(events->index(1, SharingEventsModel::kind).data().toString(), "job_released");
  EXPECT_EQ(events->index(1, SharingEventsModel::job).data().toString(), "pid 7 train");
  EXPECT_EQ(window.sharing_panel()->stored_model()->rowCount(), 1);
}

TEST_F(WidgetsTest, WindowShowsTracksFindingsFleetAndSharing) {
  MainWindow window(false);
  window.resize(1400, 900);
  window.show();
  window.open(QString::fromStdString(path_));
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  const TimelineData* data = window.capture_view()->timeline()->timeline();
  ASSERT_TRUE(data);
  EXPECT_TRUE(data->has_events);
  EXPECT_EQ(data->tracks.size(), 5u);
  EXPECT_EQ(window.capture_view()->track_model()->rowCount(), 1);  // one host
  EXPECT_EQ(window.fleet_view()->model()->rowCount(), 1);
  EXPECT_GE(window.findings_panel()->model()->rowCount(), 1);
  // No daemon: Apply is disabled and says why.
  EXPECT_FALSE(window.sharing_panel()->apply_button()->isEnabled());
  EXPECT_TRUE(window.sharing_panel()->apply_reason()->text().contains("no daemon connected"));
  // The zoom cache was written beside the database.
  EXPECT_TRUE(std::filesystem::exists(path_ + ".capture1.zoom"));
}

// A file of an older schema: the window's connections (session, timeline, analysis) read one
// migrated copy, made once and kept in the cache folder, and the status line says that
// `fleetscope migrate` upgrades the file once.
TEST_F(WidgetsTest, AnOlderFileIsCopiedOnceAndTheStatusLineOffersMigrate) {
  const std::string cache = dir_.file("cache");
  ::setenv("XDG_CACHE_HOME", cache.c_str(), 1);
  struct Unset {
    ~Unset() { ::unsetenv("XDG_CACHE_HOME"); }
  } unset;
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    // Schema 6 changed no table: today's DDL with schema_version 5, padded past the size under
    // which a file gets a private copy per connection.
    const std::string sql =
        "UPDATE meta SET value = '5' WHERE key = 'schema_version';"
        "CREATE TABLE padding(b BLOB); INSERT INTO padding VALUES (zeroblob(" +
        std::to_string(store::kMigratedCopyKeepMinBytes + (1 << 20)) + "));";
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  const uint64_t before = store::migrated_copies_made();
  {
    MainWindow window(false);
    window.resize(1400, 900);
    window.show();
    window.open(QString::fromStdString(path_));
    ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
    ASSERT_TRUE(window.capture_view()->timeline()->timeline());
    QString status;
    for (const QLabel* label : window.statusBar()->findChildren<QLabel*>()) status += label->text();
    EXPECT_TRUE(status.contains("trace.db is schema 5")) << status.toStdString();
    EXPECT_TRUE(status.contains(QString::fromStdString("`fleetscope migrate " + path_ + "`")))
        << status.toStdString();
    // The copy's progress bar is gone with the load.
    const auto* bar = window.statusBar()->findChild<QProgressBar*>();
    ASSERT_TRUE(bar);
    EXPECT_FALSE(bar->isVisible());
  }
  EXPECT_EQ(store::migrated_copies_made() - before, 1u);
}

TEST_F(WidgetsTest, SelectingAFindingHighlightsAndJumpsToItsWindow) {
  MainWindow window(false);
  window.resize(1400, 900);
  window.show();
  window.open(QString::fromStdString(path_));
  ASSERT_TRUE(window.wait_loaded());
  TimelineWidget* t = window.capture_view()->timeline();
  ASSERT_EQ(t->view().visible(), t->view().bounds());
  window.show_view("findings");
  window.findings_panel()->select_row(0);  // few_blocks, worst instance [1000, 1400) µs
  const TimeRange vis = t->view().visible();
  EXPECT_LE(vis.begin, fixture_.finding_begin);
  EXPECT_GE(vis.end, fixture_.finding_end);
  EXPECT_LT(vis.length(), at_us(1000) - at_us(0));  // the instance, not the whole capture
  // Selecting marks it on the timeline behind the tab; only Enter / double-click go there.
  EXPECT_EQ(window.tabs()->currentWidget(), window.findings_panel());
  // The highlight is painted over the window's start.
  QApplication::processEvents();
  const QImage image = t->grab().toImage();
  const QColor at_window = image.pixelColor(int(t->x_of(fixture_.finding_begin + 100'000)),
                                            TimelineWidget::header_height + 100);
  const QColor outside =
      image.pixelColor(int(t->x_of(vis.begin)) + 1, TimelineWidget::header_height + 100);
  EXPECT_NE(at_window, outside);
  // Back returns to the whole capture.
  EXPECT_TRUE(t->back());
  EXPECT_EQ(t->view().visible(), t->view().bounds());
}

// The one rule for stored vs fresh findings (analyzer::capture_findings): the fixture's stored
// gpu_idle_gaps is shown only once the capture has no rows left, and the panel says so.
TEST_F(WidgetsTest, StoredFindingsAreShownOnlyWithoutRowsAndMarked) {
  auto analysed_panel = [&](FindingsPanel& panel) {
    auto session = open_session(path_);
    const CaptureAnalysis a = analyze_capture(*session, session->captures.at(0));
    panel.set_analysis(&a);
    std::vector<std::string> rules;
    for (const auto& f : a.result().findings) rules.push_back(f.rule);
    return rules;
  };
  FindingsPanel fresh;
  const auto rules = analysed_panel(fresh);
  EXPECT_TRUE(fresh.source_label()->isHidden());
  EXPECT_EQ(std::count(rules.begin(), rules.end(), "gpu_idle_gaps"), 0);
  {
    store::Database db = store::Database::open(path_, store::OpenMode::read_write);
    for (const char* table :
         {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
          "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS",
          "cpu_ops", "iterations", "memory_events", "external_correlation"})
      db.exec(std::string("DELETE FROM ") + table);
  }
  FindingsPanel stored;
  EXPECT_EQ(analysed_panel(stored), std::vector<std::string>{"gpu_idle_gaps"});
  EXPECT_FALSE(stored.source_label()->isHidden());
  EXPECT_TRUE(stored.source_label()->text().contains("stored")) << "the source is shown";
}

TEST_F(WidgetsTest, RangeAggregateTableEqualsTheSqlAnswer) {
  MainWindow window(false);
  window.resize(1400, 900);
  window.show();
  window.open(QString::fromStdString(path_));
  ASSERT_TRUE(window.wait_loaded());
  const TimeRange range{at_us(2300), at_us(5480)};
  window.capture_view()->timeline()->set_selection(range);
  AggregateModel* model = window.capture_view()->aggregate_model();
  ASSERT_GT(model->rowCount(), 0);
  ASSERT_TRUE(window.sql_console()->run(
      QString(
          "SELECT 'kernel', s.value, COUNT(*), SUM(MIN(k.end, %2) - MAX(k.start, %1)) "
          "FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName WHERE k.start "
          "< %2 AND k.end > %1 GROUP BY 2 "
          "UNION ALL SELECT 'CUDA API', s.value, COUNT(*), SUM(MIN(r.end, %2) - MAX(r.start, %1)) "
          "FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId WHERE r.start < "
          "%2 AND r.end > %1 GROUP BY 2 "
          "UNION ALL SELECT 'CPU op', s.value, COUNT(*), SUM(MIN(c.end, %2) - MAX(c.start, %1)) "
          "FROM cpu_ops c JOIN StringIds s ON s.id = c.nameId WHERE c.start < %2 AND c.end > %1 "
          "GROUP BY 2 "
          "UNION ALL SELECT 'iteration', 'step ' || step, 1, MIN(end, %2) - MAX(start, %1) "
          "FROM iterations WHERE start < %2 AND end > %1")
          .arg(range.begin)
          .arg(range.end)));
  SqlResultModel* sql = window.sql_console()->model();
  std::map<std::pair<QString, QString>, std::pair<qlonglong, qlonglong>> expected, got;
  for (int r = 0; r < sql->rowCount(); ++r)
    expected[{sql->index(r, 0).data().toString(), sql->index(r, 1).data().toString()}] = {
        sql->index(r, 2).data().toLongLong(), sql->index(r, 3).data().toLongLong()};
  for (int r = 0; r < model->rowCount(); ++r)
    got[{model->index(r, AggregateModel::kind).data().toString(),
         model->index(r, AggregateModel::name).data().toString()}] = {
        model->index(r, AggregateModel::count).data(kSortRole).toLongLong(),
        model->index(r, AggregateModel::total).data(kSortRole).toLongLong()};
  EXPECT_EQ(got, expected);
  EXPECT_GE(expected.size(), 4u);
}

TEST_F(WidgetsTest, ClickingAKernelShowsItsRowAndItsLaunchFlow) {
  MainWindow window(false);
  window.resize(1400, 900);
  window.show();
  window.open(QString::fromStdString(path_));
  ASSERT_TRUE(window.wait_loaded());
  TimelineWidget* t = window.capture_view()->timeline();
  const size_t s7 = stream_track(*t->timeline(), 7);
  t->select_event(s7, t->timeline()->event_at(s7, at_us(3100)));
  std::map<QString, QString> fields;
  KeyValueModel* details = window.capture_view()->details_model();
  for (int r = 0; r < details->rowCount(); ++r)
    fields[details->index(r, 0).data().toString()] = details->index(r, 1).data().toString();
  EXPECT_EQ(fields["shortName"], "gemm");
  EXPECT_EQ(fields["demangledName"], "void gemm<float>(float*)");
  EXPECT_EQ(fields["start"], QString::number(at_us(3000)));
  EXPECT_EQ(fields["gridX"], "80");
  // The launch: the cudaLaunchKernel 20 µs before, on the CUDA API track.
  const auto flow = event_flow(store::Reader(path_), *t->timeline(), s7,
                               t->timeline()->event_at(s7, at_us(3100)));
  ASSERT_TRUE(flow);
  const auto& launch = t->timeline()->events[flow->launch_track];
  EXPECT_EQ(launch.start[size_t(flow->launch_event)], at_us(2980));
  EXPECT_EQ(t->timeline()->tracks[flow->launch_track].label, "tid 322 · CUDA API");
}

// The daemon's host database keeps no per-capture index on its event tables: a clicked event's
// row and its launch are found through its capture's row ranges (store::capture_rows_sql), the
// same as from the indexes of a one-shot file.
TEST_F(WidgetsTest, AnEventsRowAndFlowAreFoundWithoutThePerCaptureIndexes) {
  struct Seen {
    std::vector<std::pair<std::string, std::string>> fields;
    size_t launch_track = 0;
    int64_t launch_start = -1;
  };
  auto seen = [&](const std::string& path) {
    store::Reader reader(path);
    const TimelineData data = load_timeline(reader, fixture_.capture);
    const size_t s7 = stream_track(data, 7);
    const int64_t kernel = data.event_at(s7, at_us(3100));
    Seen out;
    for (const auto& [key, value] : event_details(reader, data, s7, kernel).fields)
      out.fields.emplace_back(key, value);
    const auto flow = event_flow(reader, data, s7, kernel);
    if (flow) {
      out.launch_track = flow->launch_track;
      out.launch_start = data.events[flow->launch_track].start[size_t(flow->launch_event)];
    }
    return out;
  };
  const Seen indexed = seen(path_);
  ASSERT_FALSE(indexed.fields.empty());
  EXPECT_EQ(indexed.launch_start, at_us(2980));
  const std::string host = dir_.file("host-like.db");
  std::filesystem::copy_file(path_, host);
  {
    store::Database db = store::Database::open(host, store::OpenMode::read_write);
    std::vector<std::string> indexes;
    auto list = db.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN "
        "('CUPTI_ACTIVITY_KIND_KERNEL', 'CUPTI_ACTIVITY_KIND_RUNTIME')");
    while (list.step()) indexes.push_back(list.column_text(0));
    ASSERT_GE(indexes.size(), 3u);
    for (const auto& name : indexes) db.exec("DROP INDEX " + name);
  }
  const Seen by_ranges = seen(host);
  EXPECT_EQ(by_ranges.fields, indexed.fields);
  EXPECT_EQ(by_ranges.launch_track, indexed.launch_track);
  EXPECT_EQ(by_ranges.launch_start, indexed.launch_start);
}

TEST_F(WidgetsTest, FleetFiltersAndDoubleClickOpensTheWorkflowsCaptures) {
  MainWindow window(false);
  window.resize(1400, 900);
  window.show();
  window.open(QString::fromStdString(path_));
  ASSERT_TRUE(window.wait_loaded());
  FleetView* fleet = window.fleet_view();
  fleet->filter()->setText("no such job");
  EXPECT_EQ(fleet->proxy()->rowCount(), 0);
  fleet->filter()->setText("ALICE");  // any column, any case
  ASSERT_EQ(fleet->proxy()->rowCount(), 1);
  window.show_view("fleet");
  emit fleet->table()->doubleClicked(fleet->proxy()->index(0, 0));
  EXPECT_EQ(window.tabs()->currentWidget(), window.capture_view());
  window.wait_loaded();
  ASSERT_TRUE(window.capture_view()->capture_key());
  EXPECT_EQ(*window.capture_view()->capture_key(), (CaptureKey{0, fixture_.capture}));
}

TEST_F(WidgetsTest, SeveralDatabasesOpenTogetherWithTablesAcrossThem) {
  const std::string second = dir_.file("rank1.db");
  testing::write_fixture(second);
  MainWindow window(false);
  window.resize(1400, 900);
  window.show();
  window.open(QStringList{QString::fromStdString(path_), QString::fromStdString(second)});
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  EXPECT_TRUE(window.windowTitle().contains("2 sources")) << window.windowTitle().toStdString();
  // The fleet across both: job "train" with a capture in each; one row per source below.
  FleetView* fleet = window.fleet_view();
  ASSERT_EQ(fleet->model()->rowCount(), 1);
  EXPECT_EQ(fleet->model()->index(0, FleetModel::captures).data().toString(), "2");
  EXPECT_EQ(fleet->model()->index(0, FleetModel::sources).data().toString(),
            "rank1.db#1, trace.db#1");
  EXPECT_TRUE(fleet->totals()->text().startsWith("Total: 1 job(s)"));
  ASSERT_EQ(fleet->sources_model()->rowCount(), 2);
  EXPECT_EQ(fleet->sources_model()->index(1, SourcesModel::file).data().toString(), "rank1.db");
  // Every capture of both files in the capture list; picking the second loads it from its file.
  QComboBox* captures = window.capture_view()->capture_choice();
  ASSERT_EQ(captures->count(), 2);
  EXPECT_TRUE(captures->itemText(1).startsWith("rank1.db · capture 1"))
      << captures->itemText(1).toStdString();
  // The worst job's first capture opened first (its captures as `fleet` lists them).
  ASSERT_TRUE(window.capture_view()->capture_key());
  EXPECT_EQ(*window.capture_view()->capture_key(), (CaptureKey{1, 1}));
  EXPECT_EQ(captures->currentIndex(), 1);
  captures->setCurrentIndex(0);
  emit captures->activated(0);
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  ASSERT_TRUE(window.capture_view()->capture_key());
  EXPECT_EQ(*window.capture_view()->capture_key(), (CaptureKey{0, 1}));
  EXPECT_GE(window.findings_panel()->model()->rowCount(), 1);  // analysed when shown
  // The diff view compares the two ranks (the same trace: no change).
  window.show_view("diff");
  DiffView* diff = window.diff_view();
  ASSERT_TRUE(diff->compare_button()->isEnabled());
  QTest::mouseClick(diff->compare_button(), Qt::LeftButton);
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  ASSERT_GT(diff->metrics_model()->rowCount(), 0);
  EXPECT_EQ(diff->metrics_model()->index(0, MetricDeltaModel::ratio).data().toString(), "1.000x");
  // Sharing: planned when shown, with the model named; a what-if control plans again.
  window.show_view("sharing");
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  SharingPanel* sharing = window.sharing_panel();
  ASSERT_TRUE(sharing->state());
  // The fixture's job keeps its GPU 50 % busy: not a candidate, so neither file's job is planned
  // and both say why (the analysis session's planner inputs, as `share plan`).
  EXPECT_EQ(sharing->state()->jobs.size(), 0u);
  ASSERT_EQ(sharing->state()->skipped.size(), 2u);
  EXPECT_NE(sharing->state()->skipped[0].find("not a candidate: GPU utilization 50 %"),
            std::string::npos)
      << sharing->state()->skipped[0];
  EXPECT_FALSE(sharing->state()->options.single_lane);
  EXPECT_TRUE(sharing->model_label()->text().contains("interference"));
  QTest::mouseClick(sharing->single_lane(), Qt::LeftButton);
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  ASSERT_TRUE(sharing->state());
  EXPECT_TRUE(sharing->state()->options.single_lane);
  EXPECT_TRUE(sharing->model_label()->text().contains("one lane per GPU"));
}

TEST_F(WidgetsTest, TheSummaryTabSumsTheVisibleRangeByTotalTime) {
  MainWindow window(false);
  window.resize(1400, 900);
  window.show();
  window.open(QString::fromStdString(path_));
  ASSERT_TRUE(window.wait_loaded());
  CaptureView* view = window.capture_view();
  view->bottom_tabs()->setCurrentWidget(view->visible_summary_page());
  TimelineWidget* t = view->timeline();
  const TimeRange range{at_us(900), at_us(3600)};
  t->show_range(range);
  const auto expected = aggregate_range(*t->timeline(), t->view().visible());
  ASSERT_FALSE(expected.empty());
  AggregateModel* model = view->visible_summary_model();
  // It follows the view after the charts' debounce.
  ASSERT_TRUE(QTest::qWaitFor([&] { return model->rowCount() == int(expected.size()); }, 5000));
  for (int r = 0; r < model->rowCount(); ++r) {
    EXPECT_EQ(model->index(r, AggregateModel::name).data().toString().toStdString(),
              expected[size_t(r)].name);
    EXPECT_EQ(model->row_at(r)->total_ns, expected[size_t(r)].total_ns);
    if (r) {
      EXPECT_GE(model->row_at(r - 1)->total_ns, model->row_at(r)->total_ns);
    }
  }
  // gemm runs [1000, 1400) µs of every 1 ms step on stream 7: three whole runs in view.
  const auto gemm = std::find_if(expected.begin(), expected.end(),
                                 [](const AggregateRow& a) { return a.name == "gemm"; });
  ASSERT_NE(gemm, expected.end());
  EXPECT_EQ(gemm->total_ns, 3 * 400'000);
}

TEST_F(WidgetsTest, ChartsFollowTheVisibleRangeAndTheSqlConsoleIsReadOnly) {
  MainWindow window(false);
  window.resize(1400, 900);
  window.show();
  window.open(QString::fromStdString(path_));
  ASSERT_TRUE(window.wait_loaded());
  TimelineWidget* t = window.capture_view()->timeline();
  t->show_range({at_us(2000), at_us(2500)});  // 500 µs visible: the charts' x axis in µs
  QChart* util = window.capture_view()->utilization_chart();
  // The charts follow after a short debounce (longer on a loaded machine): wait for the axis.
  EXPECT_TRUE(QTest::qWaitFor(
      [&] {
        auto* axis = qobject_cast<QValueAxis*>(util->axes(Qt::Horizontal).value(0));
        return axis && axis->max() == 500.0;
      },
      5000));
  ASSERT_FALSE(util->series().isEmpty());
  auto* x = qobject_cast<QValueAxis*>(util->axes(Qt::Horizontal).value(0));
  ASSERT_TRUE(x);
  EXPECT_DOUBLE_EQ(x->max(), 500.0);
  EXPECT_TRUE(x->titleText().startsWith("µs"));
  // Kernels in [2000, 2500) µs: gemm [2000, 2400) and relu [2450, 2550): 450 µs busy, 90 %.
  auto* series = qobject_cast<QLineSeries*>(util->series().value(0));
  ASSERT_TRUE(series);
  double weighted = 0, covered = 0;
  for (int i = 0; i + 1 < series->count(); i += 2) {
    const double w = series->at(i + 1).x() - series->at(i).x();
    weighted += w * series->at(i).y();
    covered += w;
  }
  EXPECT_NEAR(weighted / covered, 90.0, 1.0);
  EXPECT_FALSE(window.capture_view()->memory_chart()->series().isEmpty());

  EXPECT_FALSE(window.sql_console()->run("DELETE FROM StringIds"));
  EXPECT_FALSE(window.sql_console()->error().isEmpty());
  EXPECT_TRUE(window.sql_console()->run("SELECT COUNT(*) FROM StringIds"));
}

TEST_F(WidgetsTest, DroppedFilesOpenAndJoinTheRecentFiles) {
  MainWindow window(false);
  QMimeData mime;
  mime.setUrls({QUrl::fromLocalFile(QString::fromStdString(path_))});
  QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  // Straight to the window's handler: QApplication only routes drops while a drag is in progress.
  static_cast<QObject*>(&window)->event(&drop);
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  ASSERT_TRUE(window.session());
  EXPECT_EQ(window.session()->source(0).path, path_);
  const QStringList recent =
      QSettings("fleetscope", "fleetscope-gui").value("recent").toStringList();
  ASSERT_FALSE(recent.isEmpty());
  EXPECT_EQ(recent.front(), QString::fromStdString(path_));
}

TEST_F(WidgetsTest, BadInputGetsAMessageNamingTheFileAndNoCrash) {
  const std::string bad = dir_.file("bad.db");
  {
    std::ofstream out(bad, std::ios::binary);
    out.write("SQLite format 3\0", 16);
    for (int i = 0; i < 2048; ++i) out.put(char(i * 31));
  }
  MainWindow window(false);
  window.open(QString::fromStdString(bad));
  EXPECT_FALSE(window.wait_loaded());
  EXPECT_TRUE(window.last_error().startsWith(QString::fromStdString(bad) + ": "))
      << window.last_error().toStdString();
  // The window still works afterwards.
  window.open(QString::fromStdString(path_));
  EXPECT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
}

TEST_F(WidgetsTest, ClosingOrCancellingDuringALoadIsSafe) {
  for (int i = 0; i < 3; ++i) {
    auto window = std::make_unique<MainWindow>(false);
    window->open(QString::fromStdString(sample("hta-ns_resolution_trace_rank-0.json.gz")));
    if (i == 1) QApplication::processEvents();
    window.reset();  // destroyed while the worker imports
  }
  MainWindow window(false);
  bool cancelled = false;
  QObject::connect(window.loader(), &Loader::cancelled, [&](int) { cancelled = true; });
  window.open(QString::fromStdString(sample("hta-ns_resolution_trace_rank-0.json.gz")));
  window.cancel_load();
  window.wait_loaded();
  EXPECT_TRUE(cancelled);
  EXPECT_FALSE(window.loading());
}

TEST_F(WidgetsTest, ScreenshotOfEveryViewOfRealTracesShowsTheirContent) {
  // Two real Kineto traces (samples/traces, from HTA's test data) opened together.
  const QStringList traces{
      QString::fromStdString(sample("hta-critical_path_alexnet_trace.json.gz")),
      QString::fromStdString(sample("hta-critical_path_simple_add_trace.json.gz"))};
  const QSize size(900, 600);
  for (const QString view : {"fleet", "timeline", "findings", "sharing", "diff", "sql"}) {
    const QString png = QString::fromStdString(dir_.file(view.toStdString() + ".png"));
    QString error;
    ASSERT_TRUE(write_screenshot(traces, view, size, png, error)) << error.toStdString();
    const QImage image = QImage(png).convertToFormat(QImage::Format_RGB32);
    ASSERT_EQ(image.size(), size);
    // The same view of a window with nothing open: the picture must differ from it by what the
    // traces put there (tables filled, tracks drawn), not only by a line of text.
    MainWindow empty(false);
    empty.resize(size);
    empty.show();
    empty.show_view(view);
    QApplication::processEvents();
    const QImage blank = empty.grab().toImage().convertToFormat(QImage::Format_RGB32);
    ASSERT_EQ(blank.size(), size);
    int differing = 0;
    for (int y = 0; y < size.height(); ++y)
      for (int x = 0; x < size.width(); ++x) differing += image.pixel(x, y) != blank.pixel(x, y);
    EXPECT_GT(differing, size.width() * size.height() / 50) << view.toStdString();
  }
  QString error;
  EXPECT_FALSE(write_screenshot(QStringList{QString::fromStdString(path_)}, "nope", QSize(300, 200),
                                "x.png", error));
  EXPECT_TRUE(error.contains("unknown view"));
}

// --screenshot naming the database it shows is refused, the database kept (QImage::save wrote the
// PNG over it); a screenshot is written through the one output path (store::AtomicOutput).
TEST_F(WidgetsTest, ScreenshotNeverReplacesTheDatabaseItShows) {
  const QString db = QString::fromStdString(path_);
  QString error;
  EXPECT_FALSE(write_screenshot(QStringList{db}, "fleet", QSize(300, 200), db, error));
  EXPECT_TRUE(error.contains("it is the input")) << error.toStdString();
  QFile file(db);
  ASSERT_TRUE(file.open(QIODevice::ReadOnly));
  EXPECT_EQ(file.read(15), QByteArray("SQLite format 3"));
  const QString png = QString::fromStdString(dir_.file("fleet.png"));
  ASSERT_TRUE(write_screenshot(QStringList{db}, "fleet", QSize(300, 200), png, error))
      << error.toStdString();
  EXPECT_FALSE(QImage(png).isNull());
}

// --size out of bounds is refused before anything is rendered: 30000x30000 rendered for 44 s in
// 7 GB and wrote it; 0x0 wrote a picture of the window's smallest size without a word.
TEST_F(WidgetsTest, ScreenshotSizeOutOfBoundsIsRefusedBeforeRendering) {
  const QString db = QString::fromStdString(path_);
  for (const QSize size : {QSize(30000, 30000), QSize(0, 0), QSize(8193, 600), QSize(900, -5)}) {
    const QString png = QString::fromStdString(dir_.file("big.png"));
    QString error;
    QElapsedTimer clock;
    clock.start();
    EXPECT_FALSE(write_screenshot(QStringList{db}, "fleet", size, png, error));
    EXPECT_EQ(error, QString("--size %1x%2: expected WxH, each from 1 to 8192 pixels")
                         .arg(size.width())
                         .arg(size.height()));
    EXPECT_LT(clock.elapsed(), 2000) << "rendered before refusing";
    EXPECT_FALSE(QFile::exists(png));
  }
}

}  // namespace
}  // namespace fleetscope::gui
