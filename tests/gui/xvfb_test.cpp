// Drives the real main window on an X server (run_under_xvfb.sh starts Xvfb) with synthesized
// keyboard and mouse input: keys zoom and pan, a Shift-drag selects a range, a click selects a
// kernel, Backspace goes back in the zoom history, a wheel turn zooms.
#include <gtest/gtest.h>

#include <QApplication>
#include <QTest>
#include <QWheelEvent>

#include "capture_view.h"
#include "fleetscope/store/reader.h"
#include "gui_fixture.h"
#include "main_window.h"
#include "temp_dir.h"
#include "timeline_widget.h"

namespace fleetscope::gui {
namespace {

TEST(Xvfb, DrivesTheRealWindowWithMouseAndKeyboard) {
  ASSERT_EQ(QGuiApplication::platformName(), "xcb") << "run through run_under_xvfb.sh";
  test_support::TempDir dir;
  const std::string path = dir.file("trace.db");
  testing::write_fixture(path);
  MainWindow window(false);
  window.resize(1300, 850);
  window.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
  window.open(QString::fromStdString(path));
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  window.show_view("timeline");
  TimelineWidget* t = window.capture_view()->timeline();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(t->window()));
  const TimeRange all = t->view().visible();

  QTest::keyClick(t, Qt::Key_W);  // zoom in around the centre
  const TimeRange zoomed = t->view().visible();
  EXPECT_LT(zoomed.length(), all.length());
  QTest::keyClick(t, Qt::Key_D);  // pan right
  EXPECT_GT(t->view().visible().begin, zoomed.begin);
  QTest::keyClick(t, Qt::Key_Backspace);
  EXPECT_EQ(t->view().visible(), zoomed);
  QTest::keyClick(t, Qt::Key_Backspace);
  EXPECT_EQ(t->view().visible(), all);

  // Shift-drag across the middle of the time area selects that range.
  const int y = TimelineWidget::header_height + 5;
  const QPoint from(TimelineWidget::label_width + 200, y), to(TimelineWidget::label_width + 600, y);
  QTest::mousePress(t, Qt::LeftButton, Qt::ShiftModifier, from);
  for (int x = from.x(); x <= to.x(); x += 50) QTest::mouseMove(t, QPoint(x, y));
  QTest::mouseRelease(t, Qt::LeftButton, Qt::ShiftModifier, to);
  ASSERT_TRUE(t->selection());
  EXPECT_NEAR(double(t->selection()->begin), double(t->view().to_time(200)),
              t->view().ns_per_pixel());
  EXPECT_GT(window.capture_view()->aggregate_model()->rowCount(), 0);

  // Click in the middle of the gemm kernel of step 3 ([4000, 4400) µs) on stream 7.
  size_t s7 = 0;
  for (size_t i = 0; i < t->timeline()->tracks.size(); ++i)
    if (t->timeline()->tracks[i].key.stream == 7) s7 = i;
  t->show_range({testing::at_us(3900), testing::at_us(4500)});
  QTest::mouseClick(t, Qt::LeftButton, {},
                    QPoint(int(t->x_of(testing::at_us(4200))), t->row_top(s7) + 8));
  ASSERT_TRUE(t->selected_event());
  EXPECT_EQ(t->timeline()->events[s7].start[size_t(t->selected_event()->second)],
            testing::at_us(4000));

  // A wheel turn zooms in around the cursor.
  const TimeRange before = t->view().visible();
  const QPointF at(TimelineWidget::label_width + 300, y);
  QWheelEvent wheel(at, t->mapToGlobal(at), {}, QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                    Qt::NoScrollPhase, false);
  QApplication::sendEvent(t, &wheel);
  EXPECT_LT(t->view().visible().length(), before.length());
}

}  // namespace
}  // namespace fleetscope::gui
