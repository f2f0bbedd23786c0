// Nesting: a thread's events become a stack of rows by depth, GPU streams stay one row.
#include <gtest/gtest.h>

#include "builder.h"

namespace fleetscope::timeline::test {
namespace {

TEST(NestingDepths, ChildrenSitOneRowBelowTheEventTheyStartIn) {
  // step [0,100) > relu [10,50) > threshold [20,40); sibling [60,90); next step [100,200).
  const std::vector<int64_t> start{0, 10, 20, 60, 100};
  const std::vector<int64_t> end{100, 50, 40, 90, 200};
  EXPECT_EQ(nesting_depths(start, end, 256), (std::vector<uint16_t>{0, 1, 2, 1, 0}));
}

TEST(NestingDepths, InstantsAndTouchingEventsDoNotNest) {
  // An instant at 5 inside [0,10); [10,20) starts where [0,10) ends: a sibling, not a child.
  const std::vector<int64_t> start{0, 5, 10};
  const std::vector<int64_t> end{10, 5, 20};
  EXPECT_EQ(nesting_depths(start, end, 256), (std::vector<uint16_t>{0, 1, 0}));
}

TEST(NestingDepths, DeepStacksShareTheLastRowWithoutOverlapping) {
  std::vector<int64_t> start, end;
  for (int i = 0; i < 6; ++i) start.push_back(i), end.push_back(100 - i);  // 6 levels deep
  start.push_back(50), end.push_back(60);                                  // inside the deepest
  const auto depth = nesting_depths(start, end, 4);
  EXPECT_EQ(depth, (std::vector<uint16_t>{0, 1, 2, 3, 3, 3, 3}));
}

TEST(Rows, ThreadTracksStackByDepthAndGpuStreamsStayOneRow) {
  Builder b;
  const size_t cpu = b.track(TrackKind::thread_cpu, "tid 1 · CPU ops");
  const size_t gpu = b.track(TrackKind::gpu_stream, "GPU 0 · stream 7");
  // Given out of order: the loader reads tables in any order.
  b.event(cpu, 20'000, 40'000, "aten::threshold_backward");
  b.event(cpu, 0, 100'000, "ProfilerStep#6");
  b.event(cpu, 10'000, 50'000, "ReluBackward1");
  b.event(gpu, 0, 30'000, "gemm", EventKind::kernel);
  b.event(gpu, 10'000, 20'000, "relu", EventKind::kernel);  // overlapping: drawn, not nested
  const TimelineData& d = b.finish();
  EXPECT_EQ(d.depth_count(cpu), 3u);
  EXPECT_EQ(d.depth_count(gpu), 1u);
  ASSERT_EQ(d.rows[cpu].size(), 3u);
  for (size_t depth = 0; depth < 3; ++depth) {
    ASSERT_EQ(d.rows[cpu][depth].events.size(), 1u);
    EXPECT_EQ(d.events[cpu].depth[d.rows[cpu][depth].events[0]], depth);
  }
  EXPECT_EQ(name_at(d, cpu, d.rows[cpu][0].events[0]), "ProfilerStep#6");
  EXPECT_EQ(name_at(d, cpu, d.rows[cpu][1].events[0]), "ReluBackward1");
  EXPECT_EQ(name_at(d, cpu, d.rows[cpu][2].events[0]), "aten::threshold_backward");
  // The event under a time on each row, and the deepest on the track.
  EXPECT_EQ(name_at(d, cpu, d.event_at(cpu, 1, 30'000, 0)), "ReluBackward1");
  EXPECT_EQ(name_at(d, cpu, d.event_at(cpu, 30'000)), "aten::threshold_backward");
  EXPECT_EQ(d.event_at(cpu, 2, 45'000, 0), -1);
  EXPECT_EQ(name_at(d, cpu, d.event_at(cpu, 2, 45'000, 6'000)), "aten::threshold_backward");
}

TEST(Rows, AParentAndItsChildrenAreEachReadableAtTheirOwnZoom) {
  // The case: at a zoom where the whole step fills the view, the step, its op and the
  // op's child are each one named bar on their own row (not "2 events" on one row).
  Builder b;
  const size_t cpu = b.track(TrackKind::thread_cpu, "cpu");
  b.event(cpu, 0, 134'000, "ProfilerStep#6");
  b.event(cpu, 10'000, 60'000, "ReluBackward1");
  b.event(cpu, 12'000, 58'000, "aten::threshold_backward");
  const TimelineData& d = b.finish();
  TimeView view(d.span, 1000);
  for (size_t depth = 0; depth < 3; ++depth) {
    const auto spans = d.spans(cpu, depth, view);
    ASSERT_EQ(spans.size(), 1u) << depth;
    EXPECT_EQ(spans[0].count, 1u);
    EXPECT_GE(spans[0].event, 0);
  }
  EXPECT_EQ(d.name(d.spans(cpu, 2, view)[0].name), "aten::threshold_backward");
}

}  // namespace
}  // namespace fleetscope::timeline::test
