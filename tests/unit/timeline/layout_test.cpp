// The row layout (stacks of rows per track, hidden tracks take no space) and the absolute ruler.
#include <gtest/gtest.h>

#include <set>

#include "builder.h"
#include "fleetscope/timeline/row_layout.h"
#include "fleetscope/timeline/ruler.h"

namespace fleetscope::timeline::test {
namespace {

TimelineData three_tracks() {
  Builder b;
  const size_t steps = b.track(TrackKind::iterations, "iterations");
  const size_t cpu = b.track(TrackKind::thread_cpu, "cpu");
  const size_t gpu = b.track(TrackKind::gpu_stream, "gpu");
  b.event(steps, 0, 100, "step 0", EventKind::iteration);
  b.event(cpu, 0, 100, "a");
  b.event(cpu, 10, 90, "b");
  b.event(cpu, 20, 80, "c");
  b.event(gpu, 30, 40, "k", EventKind::kernel);
  return b.finish();
}

TEST(RowLayout, StacksEachTracksRowsAndHiddenTracksTakeNoSpace) {
  const TimelineData d = three_tracks();
  const RowLayout all(d, {}, 18, 4);
  ASSERT_EQ(all.rows().size(), 5u);  // 1 + 3 + 1
  EXPECT_EQ(all.height(), 5 * 18 + 3 * 4);
  EXPECT_EQ(all.top_of(1), 18 + 4);
  EXPECT_EQ(all.top_of(1, 2), 18 + 4 + 36);
  EXPECT_EQ(all.top_of(2), 18 + 4 + 54 + 4);
  const auto hit = all.row_at(18 + 4 + 36 + 5);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->track, 1u);
  EXPECT_EQ(hit->depth, 2u);
  EXPECT_FALSE(all.row_at(18 + 1));  // the gap between two tracks
  // Collapsing the CPU thread's group: its three rows are gone, the GPU row moves up.
  const RowLayout collapsed(d, {false, true, false}, 18, 4);
  ASSERT_EQ(collapsed.rows().size(), 2u);
  EXPECT_FALSE(collapsed.top_of(1));
  EXPECT_EQ(collapsed.top_of(2), 18 + 4);
  EXPECT_EQ(collapsed.height(), 2 * 18 + 2 * 4);
  std::set<size_t> shown;
  for (const auto& r : collapsed.rows()) shown.insert(r.track);
  EXPECT_EQ(shown, (std::set<size_t>{0, 2}));
}

TEST(RowLayout, RowsBetweenIsTheScrolledWindow) {
  const TimelineData d = three_tracks();
  const RowLayout l(d, {}, 18, 4);
  const auto [first, last] = l.rows_between(30, 60);  // rows of the CPU thread at 22, 40, 58
  EXPECT_EQ(first, 1u);
  EXPECT_EQ(last, 4u);
  const auto none = l.rows_between(1000, 1100);
  EXPECT_EQ(none.first, none.second);
}

TEST(Ruler, LabelsCountFromTheCaptureStartWhereverTheViewIs) {
  const int64_t origin = 1'700'000'000'000'000'000;  // epoch ns, as captures store them
  TimeView view({origin, origin + 10'000'000}, 1000);
  view.show({origin + 5'200'000, origin + 5'300'000});
  const auto ticks = ruler_ticks(view, origin, 10);
  ASSERT_GE(ticks.size(), 4u);
  EXPECT_LE(ticks.size(), 10u);
  EXPECT_EQ(ticks.front().label, "5.20 ms");  // 20 µs apart: two decimals
  EXPECT_NEAR(ticks.front().px, 0, 1e-6);
  std::set<std::string> labels;
  for (const auto& t : ticks) {
    EXPECT_EQ((t.ns - origin) % 20'000, 0);  // multiples of the step from the origin
    EXPECT_GE(t.px, 0);
    EXPECT_LE(t.px, 1000);
    labels.insert(t.label);
  }
  EXPECT_EQ(labels.size(), ticks.size());
  EXPECT_EQ(ticks[1].label, "5.22 ms");
}

TEST(Ruler, StepAndDurations) {
  EXPECT_EQ(ruler_step(1'000'000, 10), 200'000);  // 0, 0.2, ... 1 ms: 6 ticks
  EXPECT_EQ(ruler_step(1'000'000, 11), 100'000);
  EXPECT_EQ(ruler_label(2'500'000'000, 500'000'000, 3'000'000'000), "2.5 s");
  EXPECT_EQ(ruler_label(750, 50, 900), "750 ns");
  EXPECT_EQ(format_duration_ns(812), "812 ns");
  EXPECT_EQ(format_duration_ns(3'250), "3.25 µs");
  EXPECT_EQ(format_duration_ns(14'100'000), "14.1 ms");
  EXPECT_EQ(format_duration_ns(250'000'000'000), "250 s");
}

}  // namespace
}  // namespace fleetscope::timeline::test
