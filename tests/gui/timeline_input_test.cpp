// The timeline driven by real input (QTest mouse and keyboard events on the real widgets,
// offscreen): nested rows of a real Kineto trace, hover tooltips, search with next/previous, zoom
// to the selection, collapsing a track group, and the overview strip.
#include <gtest/gtest.h>

#include <QBarCategoryAxis>
#include <QChart>
#include <QCheckBox>
#include <QComboBox>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QTabWidget>
#include <QTest>
#include <QTreeView>

#include "capture_view.h"
#include "colors.h"
#include "flame_graph.h"
#include "fleetscope/importers/importers.h"
#include "gui_fixture.h"
#include "main_window.h"
#include "temp_dir.h"
#include "timeline_widget.h"

namespace fleetscope::gui {
namespace {

using testing::at_us;

size_t stream_track(const TimelineData& data, int32_t stream) {
  for (size_t t = 0; t < data.tracks.size(); ++t)
    if (data.tracks[t].key.kind == TrackKind::gpu_stream && data.tracks[t].key.stream == stream)
      return t;
  ADD_FAILURE() << "no stream " << stream;
  return 0;
}

class TimelineInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("trace.db");
    fixture_ = testing::write_fixture(path_);
    window_ = std::make_unique<MainWindow>(false);
    window_->resize(1400, 900);
    window_->show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(window_.get()));
  }
  void open(const std::string& path) {
    window_->open(QString::fromStdString(path));
    ASSERT_TRUE(window_->wait_loaded());
    ASSERT_TRUE(QTest::qWaitFor([&] { return t()->timeline() && t()->timeline()->has_events; }));
    window_->show_view("timeline");
  }
  TimelineWidget* t() const { return window_->capture_view()->timeline(); }
  test_support::TempDir dir_;
  std::string path_;
  testing::Fixture fixture_;
  std::unique_ptr<MainWindow> window_;
};

TEST_F(TimelineInputTest, CpuOpsOfARealTraceAreStackedRowsWithTheirOwnBars) {
  const std::string db = dir_.file("alexnet.db");
  importers::import_files({std::string(FLEETSCOPE_SOURCE_DIR) +
                           "/samples/traces/hta-critical_path_alexnet_trace.json.gz"},
                          db);
  open(db);
  const TimelineData& data = *t()->timeline();
  // The deepest CPU-op track: several rows.
  size_t cpu = data.tracks.size();
  for (size_t k = 0; k < data.tracks.size(); ++k)
    if (data.tracks[k].key.kind == TrackKind::thread_cpu &&
        (cpu == data.tracks.size() || data.depth_count(k) > data.depth_count(cpu)))
      cpu = k;
  ASSERT_LT(cpu, data.tracks.size());
  ASSERT_GE(data.depth_count(cpu), 3u);
  // The longest event on row 2: revealed, it is drawn in its own colour on row 2, inside the
  // extent of its parent on row 1 (which is drawn too).
  const auto& e = data.events[cpu];
  int64_t best = -1;
  for (uint32_t i : data.rows[cpu][2].events)
    if (best < 0 || e.end[i] - e.start[i] > e.end[size_t(best)] - e.start[size_t(best)])
      best = int64_t(i);
  ASSERT_GE(best, 0);
  t()->reveal_event(cpu, best);
  ASSERT_TRUE(t()->zoom_to_selection());
  QApplication::processEvents();
  const int y2 = t()->row_top(cpu, 2);
  ASSERT_GE(y2, 0);
  const QImage image = t()->grab().toImage();
  const QColor own = event_color(e.kind[size_t(best)], data.name(e.name[size_t(best)]));
  const int x_end = int(t()->x_of(e.end[size_t(best)])) - 3;
  EXPECT_EQ(image.pixel(x_end, y2 + TimelineWidget::row_height / 2), own.rgb());
  const int64_t parent = data.event_at(cpu, 1, e.start[size_t(best)], 0);
  ASSERT_GE(parent, 0);
  EXPECT_LE(e.start[size_t(parent)], e.start[size_t(best)]);
  EXPECT_GE(e.end[size_t(parent)], e.end[size_t(best)]);
  const QColor parent_colour =
      event_color(e.kind[size_t(parent)], data.name(e.name[size_t(parent)]));
  EXPECT_EQ(image.pixel(x_end, t()->row_top(cpu, 1) + TimelineWidget::row_height / 2),
            parent_colour.rgb());
}

TEST_F(TimelineInputTest, HoverShowsNameDurationTrackAndTheLaunch) {
  open(path_);
  const size_t s7 = stream_track(*t()->timeline(), 7);
  t()->show_range({at_us(2900), at_us(3500)});
  const QPoint at(int(t()->x_of(at_us(3300))), t()->row_top(s7) + 8);
  QTest::mouseMove(t(), at);
  ASSERT_TRUE(QTest::qWaitFor([&] { return !t()->toolTip().isEmpty(); }, 2000));
  const QString tip = t()->toolTip();
  EXPECT_TRUE(tip.startsWith("gemm")) << tip.toStdString();
  EXPECT_TRUE(tip.contains("400 µs")) << tip.toStdString();
  // The capture starts at 500 µs (the first copy): offsets count from there.
  EXPECT_TRUE(tip.contains("starts at 2.500 ms")) << tip.toStdString();
  EXPECT_TRUE(tip.contains("GPU 0 · stream 7")) << tip.toStdString();
  // When the tooltip shows, the database adds the launch and the kernel's shape.
  const QString full = t()->tooltip_at(at);
  EXPECT_TRUE(full.contains("launched by cudaLaunchKernel on tid 322 · CUDA API"))
      << full.toStdString();
  EXPECT_TRUE(full.contains("grid 80×1×1 · block 256×1×1")) << full.toStdString();
  // Over an idle gap: no tooltip.
  QTest::mouseMove(t(), QPoint(int(t()->x_of(at_us(3450))), t()->row_top(s7) + 8));
  ASSERT_TRUE(QTest::qWaitFor([&] { return t()->toolTip().isEmpty(); }, 2000));
}

TEST_F(TimelineInputTest, SearchHighlightsEveryMatchAndWalksThemWithEnter) {
  open(path_);
  CaptureView* view = window_->capture_view();
  view->search_field()->setFocus();
  QTest::keyClicks(view->search_field(), "relu");
  EXPECT_EQ(t()->match_count(), 10u);
  EXPECT_EQ(view->search_status()->text(), "10 matches");
  // Matches fade everything else: gemm is no longer drawn in its own colour.
  const size_t s7 = stream_track(*t()->timeline(), 7);
  t()->show_range({at_us(900), at_us(1700)});
  QImage image = t()->grab().toImage();
  const QColor gemm = event_color(EventKind::kernel, "gemm");
  EXPECT_NE(image.pixel(int(t()->x_of(at_us(1380))), t()->row_top(s7) + 9), gemm.rgb());
  QTest::keyClick(view->search_field(), Qt::Key_Return);
  ASSERT_TRUE(t()->selected_event());
  auto selected = *t()->selected_event();
  EXPECT_EQ(t()->timeline()->events[selected.first].start[size_t(selected.second)], at_us(1450));
  EXPECT_EQ(view->search_status()->text(), "1 / 10");
  QTest::keyClick(view->search_field(), Qt::Key_Return);
  selected = *t()->selected_event();
  EXPECT_EQ(t()->timeline()->events[selected.first].start[size_t(selected.second)], at_us(2450));
  const TimeRange vis = t()->view().visible();
  EXPECT_LE(vis.begin, at_us(2450));
  EXPECT_GE(vis.end, at_us(2550));
  QTest::keyClick(view->search_field(), Qt::Key_Return, Qt::ShiftModifier);
  EXPECT_EQ(view->search_status()->text(), "1 / 10");
  // A regular expression.
  QTest::mouseClick(view->search_regex(), Qt::LeftButton);
  ASSERT_TRUE(view->search_regex()->isChecked());
  view->search_field()->clear();
  QTest::keyClicks(view->search_field(), "^(gemm|relu)$");
  EXPECT_EQ(t()->match_count(), 20u);
  // Clearing the search draws everything in its own colour again.
  view->search_field()->clear();
  t()->show_range({at_us(900), at_us(1700)});
  image = t()->grab().toImage();
  EXPECT_EQ(image.pixel(int(t()->x_of(at_us(1380))), t()->row_top(s7) + 9), gemm.rgb());
}

TEST_F(TimelineInputTest, ClickThenZZoomsToTheEventAndARangeSelectionZoomsToIt) {
  open(path_);
  const size_t s7 = stream_track(*t()->timeline(), 7);
  t()->show_range({at_us(2000), at_us(6000)});
  QTest::mouseClick(t(), Qt::LeftButton, {},
                    QPoint(int(t()->x_of(at_us(3200))), t()->row_top(s7) + 8));
  ASSERT_TRUE(t()->selected_event());
  QTest::keyClick(t(), Qt::Key_Z);
  TimeRange vis = t()->view().visible();
  EXPECT_EQ(vis.begin, at_us(2960));  // gemm [3000, 3400) µs with 10 % margins
  EXPECT_EQ(vis.end, at_us(3440));
  // Shift+drag selects a range; Z zooms to it.
  t()->show_range({at_us(2000), at_us(6000)});
  const int y = t()->row_top(s7) + 8;
  const QPoint from(int(t()->x_of(at_us(4000))), y), to(int(t()->x_of(at_us(5000))), y);
  QTest::mousePress(t(), Qt::LeftButton, Qt::ShiftModifier, from);
  for (int x = from.x(); x <= to.x(); x += 20) QTest::mouseMove(t(), QPoint(x, y));
  QTest::mouseMove(t(), to);
  QTest::mouseRelease(t(), Qt::LeftButton, Qt::ShiftModifier, to);
  ASSERT_TRUE(t()->selection());
  const TimeRange sel = *t()->selection();
  QTest::keyClick(t(), Qt::Key_Z);
  EXPECT_EQ(t()->view().visible(), sel);
  EXPECT_NEAR(double(sel.begin), double(at_us(4000)), double(at_us(10)));
  EXPECT_NEAR(double(sel.end), double(at_us(5000)), double(at_us(10)));
}

TEST_F(TimelineInputTest, CollapsingAProcessInTheTreeHidesItsRows) {
  open(path_);
  QTreeView* tree = window_->capture_view()->track_view();
  const size_t s7 = stream_track(*t()->timeline(), 7);
  ASSERT_GE(t()->row_top(s7), 0);
  const size_t rows_before = t()->layout().rows().size();
  // host > process: select the process and collapse it with the Left key.
  const QModelIndex host = tree->model()->index(0, 0);
  const QModelIndex process = tree->model()->index(0, 0, host);
  ASSERT_TRUE(process.isValid());
  tree->setFocus();
  tree->setCurrentIndex(process);
  QTest::keyClick(tree, Qt::Key_Left);
  ASSERT_FALSE(tree->isExpanded(process));
  EXPECT_EQ(t()->row_top(s7), -1);
  EXPECT_LT(t()->layout().rows().size(), rows_before);
  QTest::keyClick(tree, Qt::Key_Right);
  ASSERT_TRUE(tree->isExpanded(process));
  EXPECT_GE(t()->row_top(s7), 0);
  EXPECT_EQ(t()->layout().rows().size(), rows_before);
}

TEST_F(TimelineInputTest, ClickingTheOverviewMovesTheViewThereAndKeysZoomAndPan) {
  open(path_);
  const TimeRange span = t()->timeline()->span;
  t()->setFocus();
  for (int i = 0; i < 4; ++i) QTest::keyClick(t(), Qt::Key_W);
  const int64_t len = t()->view().visible().length();
  EXPECT_LT(len, span.length() / 4);
  const double x = TimelineWidget::label_width + 0.75 * t()->time_area_width();
  QTest::mouseClick(t(), Qt::LeftButton, {}, QPoint(int(x), TimelineWidget::overview_height / 2));
  const TimeRange vis = t()->view().visible();
  EXPECT_EQ(vis.length(), len);
  const double centre = double(vis.begin + vis.length() / 2 - span.begin) / double(span.length());
  EXPECT_NEAR(centre, 0.75, 0.01);
  QTest::keyClick(t(), Qt::Key_D);
  EXPECT_GT(t()->view().visible().begin, vis.begin);
  QTest::keyClick(t(), Qt::Key_S);
  EXPECT_GT(t()->view().visible().length(), len);
}

TEST_F(TimelineInputTest, FlameGraphOfTheVisibleCpuOpsTopDownAndBottomUp) {
  const std::string db = dir_.file("alexnet.db");
  importers::import_files({std::string(FLEETSCOPE_SOURCE_DIR) +
                           "/samples/traces/hta-critical_path_alexnet_trace.json.gz"},
                          db);
  open(db);
  CaptureView* view = window_->capture_view();
  view->bottom_tabs()->setCurrentWidget(view->flame_graph()->parentWidget());
  QApplication::processEvents();
  FlameGraphWidget* flame = view->flame_graph();
  const timeline::CallNode& tree = flame->tree();
  ASSERT_GT(tree.total_ns, 0);
  ASSERT_FALSE(tree.children.empty());
  // The widest root child spans the bottom row from x = 0: hovering there names it.
  const QString first = QString::fromStdString(t()->timeline()->name(tree.children[0].name));
  const QPoint bottom_left(3, flame->height() - FlameGraphWidget::row_height / 2);
  QTest::mouseMove(flame, bottom_left);
  ASSERT_TRUE(QTest::qWaitFor([&] { return !flame->toolTip().isEmpty(); }, 2000));
  EXPECT_TRUE(flame->toolTip().startsWith(first)) << flame->toolTip().toStdString();
  EXPECT_TRUE(flame->toolTip().contains("% of the range's CPU-op time"));
  // Bottom-up from the combo box (keyboard): the top row is the op with the most self time.
  view->flame_order()->setFocus();
  QTest::keyClick(view->flame_order(), Qt::Key_Down);
  ASSERT_EQ(flame->order(), timeline::CallTreeOrder::bottom_up);
  const timeline::CallNode& up = flame->tree();
  ASSERT_FALSE(up.children.empty());
  EXPECT_EQ(
      up.total_ns, up.children[0].total_ns + [&] {
        int64_t rest = 0;
        for (size_t i = 1; i < up.children.size(); ++i) rest += up.children[i].total_ns;
        return rest;
      }());
  for (size_t i = 1; i < up.children.size(); ++i)
    EXPECT_GE(up.children[i - 1].total_ns, up.children[i].total_ns);
  // Zooming the timeline in changes the range the graph covers.
  const int64_t before = up.total_ns;
  t()->setFocus();
  for (int i = 0; i < 6; ++i) QTest::keyClick(t(), Qt::Key_W);
  ASSERT_TRUE(QTest::qWaitFor([&] { return flame->tree().total_ns < before; }, 3000));
}

TEST_F(TimelineInputTest, StepChartLabelsAreShortAndTheLegendSitsBelow) {
  open(path_);
  QChart* chart = window_->capture_view()->step_chart();
  ASSERT_TRUE(QTest::qWaitFor([&] { return !chart->axes(Qt::Vertical).isEmpty(); }, 5000));
  auto* axis = qobject_cast<QBarCategoryAxis*>(chart->axes(Qt::Vertical).front());
  ASSERT_NE(axis, nullptr);
  EXPECT_EQ(axis->categories().front(), "#0");
  EXPECT_EQ(axis->count(), 10);
  EXPECT_EQ(chart->legend()->alignment(), Qt::AlignBottom);
  EXPECT_TRUE(chart->title().contains("steps 0–9 of 10")) << chart->title().toStdString();
}

}  // namespace
}  // namespace fleetscope::gui
