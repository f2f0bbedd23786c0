// The call tree of CPU ops from the timeline's nesting: top-down totals and self times, bottom-up
// self times under their callers, clipping to a range.
#include <gtest/gtest.h>

#include "builder.h"
#include "fleetscope/timeline/call_tree.h"

namespace fleetscope::timeline::test {
namespace {

// step [0,100) > fwd [10,60) > mm [20,50); step > bwd [60,90) > mm [65,75); a second step
// [100,150) > fwd [110,130).
TimelineData two_steps() {
  Builder b;
  const size_t t = b.track(TrackKind::thread_cpu, "cpu");
  b.event(t, 0, 100, "step");
  b.event(t, 10, 60, "fwd");
  b.event(t, 20, 50, "mm");
  b.event(t, 60, 90, "bwd");
  b.event(t, 65, 75, "mm");
  b.event(t, 100, 150, "step");
  b.event(t, 110, 130, "fwd");
  return b.finish();
}

const CallNode* find(const TimelineData& d, const CallNode& n, const std::string& name) {
  for (const auto& c : n.children)
    if (d.name(c.name) == name) return &c;
  return nullptr;
}

TEST(CallTree, TopDownTotalsAndSelfTimes) {
  const TimelineData d = two_steps();
  const CallNode root = call_tree(d, d.span, CallTreeOrder::top_down);
  EXPECT_EQ(root.total_ns, 150);
  ASSERT_EQ(root.children.size(), 1u);
  const CallNode& step = root.children[0];
  EXPECT_EQ(d.name(step.name), "step");
  EXPECT_EQ(step.count, 2);
  EXPECT_EQ(step.total_ns, 150);
  EXPECT_EQ(step.self_ns, 150 - 50 - 30 - 20);
  const CallNode* fwd = find(d, step, "fwd");
  ASSERT_NE(fwd, nullptr);
  EXPECT_EQ(fwd->total_ns, 70);
  EXPECT_EQ(fwd->self_ns, 40);
  EXPECT_EQ(step.children[0].name, fwd->name);  // largest first
  const CallNode* mm = find(d, *fwd, "mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->total_ns, 30);
  EXPECT_EQ(find(d, *find(d, step, "bwd"), "mm")->total_ns, 10);
}

TEST(CallTree, BottomUpSelfTimeUnderEachCaller) {
  const TimelineData d = two_steps();
  const CallNode root = call_tree(d, d.span, CallTreeOrder::bottom_up);
  EXPECT_EQ(root.total_ns, 150);  // every ns is some op's self time
  const CallNode* mm = find(d, root, "mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->total_ns, 40);
  EXPECT_EQ(mm->self_ns, 40);
  EXPECT_EQ(mm->count, 2);
  // mm under fwd 30, under bwd 10; under fwd then step.
  EXPECT_EQ(find(d, *mm, "fwd")->total_ns, 30);
  EXPECT_EQ(find(d, *mm, "bwd")->total_ns, 10);
  EXPECT_EQ(find(d, *find(d, *mm, "fwd"), "step")->total_ns, 30);
  EXPECT_EQ(find(d, root, "step")->total_ns, 50);
  EXPECT_EQ(find(d, root, "fwd")->total_ns, 40);
}

TEST(CallTree, ClippedToTheRange) {
  const TimelineData d = two_steps();
  // [55, 120): step 0 from 55 (fwd 55-60, bwd 60-90 with mm 65-75), step 1 to 120 (fwd 110-120).
  const CallNode root = call_tree(d, {55, 120}, CallTreeOrder::top_down);
  EXPECT_EQ(root.total_ns, 65);
  const CallNode& step = root.children.at(0);
  EXPECT_EQ(step.total_ns, 65);
  EXPECT_EQ(find(d, step, "bwd")->total_ns, 30);
  EXPECT_EQ(find(d, step, "fwd")->total_ns, 15);
  EXPECT_EQ(find(d, *find(d, step, "fwd"), "mm"), nullptr);  // mm [20, 50) is outside
}

}  // namespace
}  // namespace fleetscope::timeline::test
