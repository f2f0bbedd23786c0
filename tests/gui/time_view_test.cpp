#include "time_view.h"

#include <gtest/gtest.h>

namespace fleetscope::gui {
namespace {

TEST(TimeView, MapsTimeToPixelsAndBack) {
  TimeView v({1000, 2000}, 100);
  EXPECT_DOUBLE_EQ(v.to_pixel(1000), 0);
  EXPECT_DOUBLE_EQ(v.to_pixel(1500), 50);
  EXPECT_DOUBLE_EQ(v.to_pixel(2000), 100);
  EXPECT_EQ(v.to_time(25), 1250);
  EXPECT_EQ(v.to_time(0.4), 1004);  // rounded to the nearest ns
  EXPECT_DOUBLE_EQ(v.ns_per_pixel(), 10);
}

TEST(TimeView, ZoomKeepsTheTimeUnderTheAnchor) {
  TimeView v({0, 1'000'000}, 1000);
  const int64_t before = v.to_time(300);
  v.zoom(4, 300);
  EXPECT_NEAR(double(v.to_time(300)), double(before), 1.0);
  EXPECT_EQ(v.visible().length(), 250'000);
  v.zoom(0.5, 300);
  EXPECT_EQ(v.visible().length(), 500'000);
  EXPECT_NEAR(double(v.to_time(300)), double(before), 1.0);
}

TEST(TimeView, StaysInsideTheBoundsAndAboveTheMinimumSpan) {
  TimeView v({0, 1'000'000}, 1000);
  v.zoom(0.1, 500);  // zoom out past the bounds
  EXPECT_EQ(v.visible(), (TimeRange{0, 1'000'000}));
  v.zoom(1e9, 0);  // zoom in past the minimum
  EXPECT_EQ(v.visible().length(), TimeView::min_span_ns);
  EXPECT_EQ(v.visible().begin, 0);
  v.show({900'000, 1'100'000});  // past the end: shifted back inside
  EXPECT_EQ(v.visible(), (TimeRange{800'000, 1'000'000}));
  v.pan(-1e6);
  EXPECT_EQ(v.visible(), (TimeRange{0, 200'000}));
  v.pan(400);  // 400 px of 200 ns each
  EXPECT_EQ(v.visible(), (TimeRange{80'000, 280'000}));
}

TEST(TimeView, HistoryHasOneEntryPerGestureAndGoesBack) {
  TimeView v({0, 1000}, 100);
  EXPECT_FALSE(v.back());
  v.show({100, 600});
  v.zoom(2, 0);
  v.zoom(2, 0);  // the same gesture: one entry
  EXPECT_EQ(v.history_size(), 2u);
  EXPECT_EQ(v.visible(), (TimeRange{100, 225}));
  EXPECT_TRUE(v.back());
  EXPECT_EQ(v.visible(), (TimeRange{100, 600}));
  EXPECT_TRUE(v.back());
  EXPECT_EQ(v.visible(), (TimeRange{0, 1000}));
  EXPECT_FALSE(v.back());
}

TEST(TimeView, ResizingKeepsTheRange) {
  TimeView v({0, 1000}, 100);
  v.set_width(500);
  EXPECT_EQ(v.visible(), (TimeRange{0, 1000}));
  EXPECT_DOUBLE_EQ(v.to_pixel(500), 250);
  v.set_width(0);  // a hidden widget: no division by zero
  EXPECT_DOUBLE_EQ(v.width(), 1);
}

}  // namespace
}  // namespace fleetscope::gui
