// The critical path on the timeline (issue 26), driven by real input (QTest, offscreen) on a real
// Kineto trace (HTA's ns_resolution rank-0 trace, V100, steps 101-105: the path of step 101):
// the GUI's path is `fleetscope analyze --format json`'s, the toggle outlines its events on the
// timeline and goes to its window, and a click on an event of the path selects it on the timeline
// and brings it into view.
#include <gtest/gtest.h>

#include <QCheckBox>
#include <QLabel>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <QtTest/QAbstractItemModelTester>
#include <nlohmann/json.hpp>
#include <set>

#include "capture_view.h"
#include "cli_run.h"
#include "fleetscope/timeline/ruler.h"
#include "main_window.h"
#include "timeline_widget.h"

namespace fleetscope::gui {
namespace {

const std::string kTrace = std::string(FLEETSCOPE_SOURCE_DIR) +
                           "/tests/data/traces/kineto/hta-ns_resolution_trace_rank-0.json.gz";

TEST(CriticalPathInput, TheToggleHighlightsThePathAndARowJumpsToItsEvent) {
  // The analyzer's path, as the command prints it.
  const auto run = test_support::run_cli({"analyze", kTrace, "--format", "json", "--series"});
  ASSERT_EQ(run.code, 0) << run.err;
  const auto cli = nlohmann::json::parse(run.out).at("metrics").at("critical_path");
  ASSERT_TRUE(cli.is_object()) << run.out.substr(0, 400);
  std::set<std::string> cli_names;
  for (const auto& edge : cli.at("path")) cli_names.insert(edge.at("name").get<std::string>());

  MainWindow window(false);
  window.resize(1400, 900);
  window.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
  window.open(QString::fromStdString(kTrace));
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  CaptureView* view = window.capture_view();
  TimelineWidget* t = view->timeline();
  ASSERT_TRUE(QTest::qWaitFor([&] { return t->timeline() && t->timeline()->complete(); }));
  QAbstractItemModelTester tester(view->critical_path_model(),
                                  QAbstractItemModelTester::FailureReportingMode::Fatal);
  ASSERT_TRUE(QTest::qWaitFor([&] { return view->critical_path_toggle()->isEnabled(); }));
  view->bottom_tabs()->setCurrentWidget(view->critical_path_page());

  // The same path: its length in the summary, its events among the command's edges.
  const QString summary = view->critical_path_summary()->text();
  EXPECT_TRUE(summary.contains(
      QString::fromStdString(timeline::format_duration_ns(cli.at("length_ns").get<int64_t>()))))
      << summary.toStdString();
  EXPECT_TRUE(summary.contains(QString("%1 edges").arg(cli.at("path_edges").get<int64_t>())))
      << summary.toStdString();
  const auto& events = view->critical_path_events();
  ASSERT_GE(events.size(), 3u);
  ASSERT_EQ(view->critical_path_model()->rowCount(), int(events.size()));
  std::set<std::string> kinds;
  size_t located = 0;
  for (const auto& e : events) {
    EXPECT_TRUE(cli_names.count(e.name)) << e.name;
    kinds.insert(e.kind);
    if (e.track) ++located;
  }
  // Host work and GPU work both lie on it (CPU ops or API calls, and kernels), each found on
  // its track of the timeline.
  EXPECT_TRUE(kinds.count("kernel")) << kinds.size();
  EXPECT_TRUE(kinds.count("cpu_op") || kinds.count("runtime"));
  EXPECT_EQ(located, events.size());

  // The toggle, clicked: every event of the path outlined, the view on the path's window.
  t->show_range(t->timeline()->span);
  EXPECT_TRUE(t->marked_events().empty());
  QTest::mouseClick(view->critical_path_toggle(), Qt::LeftButton);
  ASSERT_TRUE(view->critical_path_toggle()->isChecked());
  std::set<EventRef> expected;
  for (const auto& e : events) expected.insert({*e.track, e.event});
  EXPECT_EQ(t->marked_events(), expected);
  const TimeRange visible = t->view().visible();
  const int64_t begin = cli.at("window_start_ns").get<int64_t>();
  const int64_t end = cli.at("window_end_ns").get<int64_t>();
  EXPECT_LE(visible.begin, begin);
  EXPECT_GE(visible.end, end);
  EXPECT_LT(visible.length(), t->timeline()->span.length());  // zoomed in on it

  // A click on the last event of the path: selected on the timeline and in view.
  QTableView* table = view->critical_path_table();
  const int row = int(events.size()) - 1;
  const QRect cell = table->visualRect(table->model()->index(row, 1));
  QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, cell.center());
  ASSERT_TRUE(t->selected_event());
  EXPECT_EQ(t->selected_event()->first, *events[size_t(row)].track);
  EXPECT_EQ(t->selected_event()->second, events[size_t(row)].event);
  const TimeRange now = t->view().visible();
  EXPECT_LT(now.begin, events[size_t(row)].end);
  EXPECT_GT(now.end, events[size_t(row)].start);

  // Off again: nothing outlined.
  QTest::mouseClick(view->critical_path_toggle(), Qt::LeftButton);
  EXPECT_FALSE(view->critical_path_toggle()->isChecked());
  EXPECT_TRUE(t->marked_events().empty());
}

}  // namespace
}  // namespace fleetscope::gui
