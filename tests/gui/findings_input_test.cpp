// The Findings tab driven by real input (QTest, offscreen): selecting a finding by click or key
// keeps the tab (the focus once made row 0 current and threw the user to the Timeline), Enter
// goes to the timeline; a finding's offending events are listed with times from the capture
// start, marked on the timeline, and the view goes to the worst instance; a click on an event row
// shows it.
#include <gtest/gtest.h>

#include <QChart>
#include <QCheckBox>
#include <QLabel>
#include <QLineSeries>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <QTextBrowser>
#include <QValueAxis>

#include "capture_view.h"
#include "gui_fixture.h"
#include "main_window.h"
#include "panels.h"
#include "temp_dir.h"
#include "timeline_widget.h"

namespace fleetscope::gui {
namespace {

using testing::at_us;

class FindingsInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("trace.db");
    // The analyzer's findings on the fixture (the rows are there, so they are analysed now:
    // analyzer/analysis.h capture_findings()): few_blocks, with every gemm and relu kernel as
    // offending events (rules_builtin.cpp) and the first gemm, [1000, 1400) µs, as the focus; and
    // tensor_cores_unused.
    fixture_ = testing::write_fixture(path_);
  }
  void open() {
    window_ = std::make_unique<MainWindow>(false);
    window_->resize(1400, 900);
    window_->show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(window_.get()));
    window_->open(QString::fromStdString(path_));
    ASSERT_TRUE(window_->wait_loaded());
    TimelineWidget* t = window_->capture_view()->timeline();
    ASSERT_TRUE(QTest::qWaitFor([&] { return t->timeline() && t->timeline()->has_events; }));
  }
  // The view row of the finding with this rule.
  int row_of(const QString& rule) const {
    QTableView* table = window_->findings_panel()->table();
    for (int r = 0; r < table->model()->rowCount(); ++r)
      if (table->model()->index(r, FindingsModel::rule).data().toString() == rule) return r;
    ADD_FAILURE() << "no finding " << rule.toStdString();
    return 0;
  }
  void click_row(QTableView* table, int row) {
    const QRect cell = table->visualRect(table->model()->index(row, 0));
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, cell.center());
  }
  test_support::TempDir dir_;
  std::string path_;
  testing::Fixture fixture_;
  std::unique_ptr<MainWindow> window_;
};

TEST_F(FindingsInputTest, ALargeCaptureWaitsForAnalyzeAndKeepsOnlyTheResults) {
  // Over the limit (here 10 events; 2 million by default) the capture opens without its
  // analysis: the Findings tab says so and offers Analyze; a click analyses it.
  window_ = std::make_unique<MainWindow>(false);
  window_->loader()->set_auto_analysis_limit(10);
  window_->resize(1400, 900);
  window_->show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(window_.get()));
  window_->open(QString::fromStdString(path_));
  ASSERT_TRUE(window_->wait_loaded()) << window_->last_error().toStdString();
  window_->show_view("findings");
  FindingsPanel* panel = window_->findings_panel();
  EXPECT_EQ(panel->model()->rowCount(), 0);
  ASSERT_TRUE(panel->analyze_button()->isVisible());
  EXPECT_TRUE(panel->deferred_label()->text().contains("Not analysed yet"))
      << panel->deferred_label()->text().toStdString();
  EXPECT_FALSE(window_->capture_view()->critical_path_toggle()->isEnabled());
  QTest::mouseClick(panel->analyze_button(), Qt::LeftButton);
  ASSERT_TRUE(window_->wait_loaded()) << window_->last_error().toStdString();
  EXPECT_GT(panel->model()->rowCount(), 0);
  EXPECT_FALSE(panel->analyze_button()->isVisible());
  EXPECT_EQ(window_->tabs()->currentWidget(), panel);  // the tab stays
  // The session kept the results, not the capture's events.
  EXPECT_FALSE(window_->session()->analysis->analysis({0, fixture_.capture})->data);
}

// The mean of a utilization step series (two points per bucket) weighted by bucket width.
double mean_utilization(QChart* chart) {
  auto* series = qobject_cast<QLineSeries*>(chart->series().value(0));
  if (!series) return -1;
  double weighted = 0, covered = 0;
  for (int i = 0; i + 1 < series->count(); i += 2) {
    const double w = series->at(i + 1).x() - series->at(i).x();
    weighted += w * series->at(i).y();
    covered += w;
  }
  return covered > 0 ? weighted / covered : -1;
}

TEST_F(FindingsInputTest, UtilizationChartIsFilledBeforeAnalyzeAndAgreesAfter) {
  // A capture over the limit opens without its analysis; the utilization chart reads the
  // timeline's kernels meanwhile, through the analyzer's utilization function.
  window_ = std::make_unique<MainWindow>(false);
  window_->loader()->set_auto_analysis_limit(10);
  window_->resize(1400, 900);
  window_->show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(window_.get()));
  window_->open(QString::fromStdString(path_));
  ASSERT_TRUE(window_->wait_loaded()) << window_->last_error().toStdString();
  TimelineWidget* t = window_->capture_view()->timeline();
  ASSERT_TRUE(QTest::qWaitFor([&] { return t->timeline() && t->timeline()->complete(); }));
  QChart* util = window_->capture_view()->utilization_chart();
  t->show_range({at_us(2000), at_us(2500)});
  auto axis_at_500 = [&] {
    auto* axis = qobject_cast<QValueAxis*>(util->axes(Qt::Horizontal).value(0));
    return axis && axis->max() == 500.0 && !util->series().isEmpty();
  };
  ASSERT_TRUE(QTest::qWaitFor(axis_at_500, 5000));
  EXPECT_TRUE(util->title().contains("not analysed yet")) << util->title().toStdString();
  // Kernels in [2000, 2500) µs: gemm [2000, 2400) and relu [2450, 2550): 450 µs busy, 90 %.
  const double before = mean_utilization(util);
  EXPECT_NEAR(before, 90.0, 1.0);

  window_->show_view("findings");
  QTest::mouseClick(window_->findings_panel()->analyze_button(), Qt::LeftButton);
  ASSERT_TRUE(window_->wait_loaded()) << window_->last_error().toStdString();
  ASSERT_TRUE(QTest::qWaitFor([&] { return !util->title().contains("not analysed"); }, 5000));
  ASSERT_TRUE(QTest::qWaitFor(axis_at_500, 5000));
  EXPECT_DOUBLE_EQ(mean_utilization(util), before);  // one definition: the same figure
}

TEST_F(FindingsInputTest, SelectingKeepsTheTabAndEnterGoesToTheTimeline) {
  open();
  window_->show_view("findings");
  FindingsPanel* panel = window_->findings_panel();
  QTableView* table = panel->table();
  table->setFocus();  // the focus alone once switched tabs
  QApplication::processEvents();
  EXPECT_EQ(window_->tabs()->currentWidget(), panel);
  click_row(table, row_of("tensor_cores_unused"));
  EXPECT_EQ(window_->tabs()->currentWidget(), panel);
  EXPECT_FALSE(panel->details()->toPlainText().isEmpty());
  QTest::keyClick(table, Qt::Key_Up);
  QTest::keyClick(table, Qt::Key_Down);
  EXPECT_EQ(window_->tabs()->currentWidget(), panel);
  click_row(table, row_of("few_blocks"));
  EXPECT_EQ(window_->tabs()->currentWidget(), panel);
  QTest::keyClick(table, Qt::Key_Return);
  EXPECT_EQ(window_->tabs()->currentWidget(), window_->capture_view());
}

TEST_F(FindingsInputTest, OffendingEventsAreListedMarkedAndShown) {
  open();
  window_->show_view("findings");
  FindingsPanel* panel = window_->findings_panel();
  TimelineWidget* t = window_->capture_view()->timeline();
  click_row(panel->table(), row_of("few_blocks"));
  // The evidence table: the offending kernels (the ten gemms, then the ten relus), found on the
  // timeline, times from the capture start (500 µs, the first copy).
  EvidenceModel* events = panel->evidence_model();
  ASSERT_EQ(events->rowCount(), 20);
  EXPECT_EQ(events->index(0, EvidenceModel::start).data().toString(), "500 µs");
  EXPECT_EQ(events->index(0, EvidenceModel::duration).data().toString(), "400 µs");
  EXPECT_EQ(events->index(1, EvidenceModel::start).data().toString(), "1.500 ms");
  EXPECT_EQ(events->index(0, EvidenceModel::track).data().toString(), "GPU 0 · stream 7");
  for (const auto& e : panel->evidence().events) ASSERT_TRUE(e.track);
  // Readable evidence: durations and shares, not raw numbers.
  const QString details = panel->details()->toPlainText();
  EXPECT_TRUE(details.contains("5.000 ms")) << details.toStdString();
  EXPECT_TRUE(details.contains("100.0 %")) << details.toStdString();
  EXPECT_TRUE(details.contains("Worst instance: 500 µs")) << details.toStdString();
  // The timeline behind the tab went to the worst instance, not to the whole window.
  const TimeRange vis = t->view().visible();
  EXPECT_LE(vis.begin, at_us(1000));
  EXPECT_GE(vis.end, at_us(1400));
  EXPECT_LT(vis.length(), at_us(1000) - at_us(0));
  // A click on the second event row shows that kernel (selected, in view); the tab stays.
  click_row(panel->evidence_table(), 1);
  ASSERT_TRUE(t->selected_event());
  const auto [track, event] = *t->selected_event();
  EXPECT_EQ(t->timeline()->events[track].start[size_t(event)], at_us(2000));
  EXPECT_LE(t->view().visible().begin, at_us(2000));
  EXPECT_GE(t->view().visible().end, at_us(2400));
  EXPECT_EQ(window_->tabs()->currentWidget(), panel);
  // Both are outlined on the timeline: the marked outline's colour at the kernel's left edge.
  window_->show_view("timeline");
  QApplication::processEvents();
  const QImage image = t->grab().toImage();
  const int y = t->row_top(track) + TimelineWidget::row_height / 2;
  const int x = int(t->x_of(at_us(2200)));
  bool outlined = false;
  for (int dy = -TimelineWidget::row_height / 2; dy <= TimelineWidget::row_height / 2; ++dy)
    outlined |= image.pixelColor(x, y + dy) == QColor(0, 0, 0) ||
                image.pixelColor(x, y + dy) == QColor(230, 110, 0);
  EXPECT_TRUE(outlined);
}

// On a real Kineto trace (HTA's ns_resolution rank-0 trace, V100) every finding about GPU work
// lists the GPU events it is about, each found on the timeline, and the view goes to its worst
// instance: tensor_cores_unused (the plain GEMMs; it is the first finding and was shown without
// any event) and fusion_candidates (the kernels of its longest run) included.
TEST_F(FindingsInputTest, EveryGpuFindingOfARealTraceListsItsEventsOnTheTimeline) {
  path_ = std::string(FLEETSCOPE_SOURCE_DIR) +
          "/tests/data/traces/kineto/hta-ns_resolution_trace_rank-0.json.gz";
  open();
  TimelineWidget* t = window_->capture_view()->timeline();
  ASSERT_TRUE(QTest::qWaitFor([&] { return t->timeline()->complete(); }));
  window_->show_view("findings");
  FindingsPanel* panel = window_->findings_panel();
  ASSERT_TRUE(QTest::qWaitFor([&] { return panel->table()->model()->rowCount() >= 5; }));
  for (const QString rule : {"tensor_cores_unused", "low_occupancy", "launch_bound_small_kernels",
                             "launch_delay_outliers", "fusion_candidates"}) {
    SCOPED_TRACE(rule.toStdString());
    click_row(panel->table(), row_of(rule));
    EXPECT_EQ(window_->tabs()->currentWidget(), panel);
    const FindingEvidence& evidence = panel->evidence();
    ASSERT_FALSE(evidence.events.empty());
    EXPECT_EQ(panel->evidence_model()->rowCount(), int(evidence.events.size()));
    for (const EvidenceEvent& e : evidence.events) {
      EXPECT_TRUE(e.kind == "kernel" || e.kind == "memcpy" || e.kind == "memset") << e.kind;
      EXPECT_TRUE(e.track) << e.name << " not found on the timeline";
    }
    // The view behind the tab holds the worst instance, tighter than the finding's window.
    ASSERT_TRUE(evidence.focus);
    const TimeRange vis = t->view().visible();
    EXPECT_LE(vis.begin, evidence.focus->begin);
    EXPECT_GE(vis.end, evidence.focus->end);
  }
  // The plain GEMMs, longest first: the first one's name says so.
  click_row(panel->table(), row_of("tensor_cores_unused"));
  const QString first = panel->evidence_model()->index(0, EvidenceModel::name).data().toString();
  EXPECT_TRUE(first.contains("sgemm") || first.contains("conv")) << first.toStdString();
}

}  // namespace
}  // namespace fleetscope::gui
