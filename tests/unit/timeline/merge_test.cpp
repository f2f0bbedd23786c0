// Per-row merging and zoom levels: only sub-pixel neighbours closer than a pixel merge, on the
// same row; wide events (steps, parents) are never merged; levels draw what the raw events draw
// and hold no more items than the row has events.
#include <gtest/gtest.h>

#include <random>

#include "builder.h"

namespace fleetscope::timeline::test {
namespace {

void expect_disjoint_within(const std::vector<DrawSpan>& spans, double width) {
  for (size_t i = 0; i < spans.size(); ++i) {
    EXPECT_GE(spans[i].x1 - spans[i].x0, 1.0 - 1e-9);
    EXPECT_GE(spans[i].x0, -1.0);
    EXPECT_LE(spans[i].x1, width + 2.0);
    if (i) {
      EXPECT_GE(spans[i].x0, spans[i - 1].x1) << i;
    }
  }
}

uint64_t total(const std::vector<DrawSpan>& spans) {
  uint64_t n = 0;
  for (const auto& s : spans) n += s.count;
  return n;
}

TEST(Merge, BackToBackStepsStayOneBarEach) {
  // Six steps of 1 ms with no gap (the iterations the issue found merged into "6 events").
  Builder b;
  const size_t steps = b.track(TrackKind::iterations, "iterations");
  for (int i = 0; i < 6; ++i)
    b.event(steps, i * 1'000'000, (i + 1) * 1'000'000, "step " + std::to_string(i),
            EventKind::iteration);
  TimelineData& d = b.finish();
  TimeView view(d.span, 1200);
  auto spans = d.spans(steps, 0, view);
  ASSERT_EQ(spans.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(spans[i].count, 1u);
    EXPECT_EQ(d.name(spans[i].name), "step " + std::to_string(i));
    EXPECT_NEAR(spans[i].x1 - spans[i].x0, 200, 1e-6);
  }
  // From the levels alone (the cached summary before the raw events load): the same six bars.
  d.has_events = false;
  spans = d.spans(steps, 0, view);
  ASSERT_EQ(spans.size(), 6u);
  for (const auto& s : spans) EXPECT_EQ(s.count, 1u);
}

TEST(Merge, SubPixelNeighboursMergeButAWideEventBesideThemDoesNot) {
  Builder b;
  const size_t t = b.track(TrackKind::gpu_stream, "stream");
  // 100 kernels of 100 ns every 300 ns, then one kernel of 500 µs right after them.
  for (int i = 0; i < 100; ++i) b.event(t, i * 300, i * 300 + 100, "tiny", EventKind::kernel);
  b.event(t, 30'000, 530'000, "wide", EventKind::kernel);
  const TimelineData& d = b.finish();
  TimeView view(d.span, 530);  // 1000 ns per pixel: every tiny kernel is below a pixel
  const auto spans = d.spans(t, 0, view);
  expect_disjoint_within(spans, 530);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].count, 100u);
  EXPECT_EQ(spans[0].event, -1);
  EXPECT_EQ(spans[1].count, 1u);
  EXPECT_EQ(d.name(spans[1].name), "wide");
  EXPECT_NEAR(spans[1].x0, 30, 1e-6);
}

TEST(Merge, NeighboursAPixelApartStaySeparate) {
  Builder b;
  const size_t t = b.track(TrackKind::gpu_stream, "stream");
  for (int i = 0; i < 10; ++i) b.event(t, i * 10'000, i * 10'000 + 100, "k", EventKind::kernel);
  const TimelineData& d = b.finish();
  TimeView view(d.span, 1000);  // 90 ns per pixel: 100 ns kernels about a pixel wide, 110 apart
  EXPECT_EQ(d.spans(t, 0, view).size(), 10u);
}

TEST(Merge, MergingNeverCrossesRows) {
  Builder b;
  const size_t t = b.track(TrackKind::thread_cpu, "cpu");
  // A parent of 1 ms with 50 children of 2 µs: at 10 µs per pixel the children merge with one
  // another on row 1, and the parent stays one named bar on row 0.
  b.event(t, 0, 1'000'000, "parent");
  for (int i = 0; i < 50; ++i)
    b.event(t, 100'000 + i * 5'000, 100'000 + i * 5'000 + 2'000, "child");
  const TimelineData& d = b.finish();
  TimeView view(d.span, 100);
  const auto top = d.spans(t, 0, view);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].count, 1u);
  EXPECT_EQ(d.name(top[0].name), "parent");
  const auto children = d.spans(t, 1, view);
  EXPECT_EQ(total(children), 50u);
  EXPECT_LT(children.size(), 50u);
}

// Random rows: the levels draw the same runs as merging the raw events, hold no more items than
// the row has events (plus the coarsest), and their items are disjoint, sorted and never leave two
// close sub-pixel neighbours unmerged.
TEST(Levels, AreBoundedDisjointAndDrawWhatTheRawEventsDraw) {
  std::mt19937_64 rng(7);
  Builder b;
  const size_t gpu = b.track(TrackKind::gpu_stream, "stream");
  const size_t cpu = b.track(TrackKind::thread_cpu, "cpu");
  int64_t t = 0;
  for (int i = 0; i < 20'000; ++i) {
    const int64_t len = int64_t(1) << (rng() % 22);  // 1 ns .. 2 ms
    const int64_t gap = int64_t(1) << (rng() % 20);
    b.event(gpu, t, t + len, "k" + std::to_string(rng() % 7), EventKind::kernel);
    b.event(cpu, t, t + len, "op");
    if (rng() % 3 == 0) b.event(cpu, t + len / 4, t + len / 2, "child");
    t += len + gap;
  }
  TimelineData& d = b.finish();
  for (size_t track : {gpu, cpu})
    for (size_t depth = 0; depth < d.depth_count(track); ++depth) {
      const RowLevels& levels = d.levels[track][depth];
      ASSERT_FALSE(levels.empty());
      size_t items = 0;
      for (const ZoomLevel& level : levels) {
        items += level.items.size();
        uint64_t count = 0;
        for (size_t i = 0; i < level.items.size(); ++i) {
          const LevelItem& x = level.items[i];
          count += x.count;
          if (!i) continue;
          const LevelItem& p = level.items[i - 1];
          ASSERT_GE(x.start, p.end);
          const bool both_narrow = (p.count > 1 || p.end - p.start < level.gap_ns) &&
                                   (x.count > 1 || x.end - x.start < level.gap_ns);
          EXPECT_FALSE(both_narrow && x.start - p.end < level.gap_ns);
        }
        EXPECT_EQ(count, d.rows[track][depth].events.size());
      }
      // Rows above small_row_events: the kept levels halve, so they hold no more than the events.
      ASSERT_GT(d.rows[track][depth].events.size(), TimelineData::small_row_events);
      EXPECT_LE(items, d.rows[track][depth].events.size() + levels.back().items.size());
    }
  // Drawn from the levels and from the raw events: the same events, the same wide bars.
  TimelineData raw_only = d;
  for (auto& track : raw_only.levels)
    for (auto& row : track) row.clear();
  for (int64_t visible : {t, t / 7, t / 300, int64_t(2'000'000)}) {
    TimeView view(d.span, 1500);
    view.show({d.span.begin + visible / 3, d.span.begin + visible / 3 + visible});
    for (size_t track : {gpu, cpu})
      for (size_t depth = 0; depth < d.depth_count(track); ++depth) {
        const auto from_levels = d.spans(track, depth, view);
        const auto from_raw = raw_only.spans(track, depth, view);
        expect_disjoint_within(from_levels, 1500);
        expect_disjoint_within(from_raw, 1500);
        EXPECT_LE(from_levels.size(), 3000u);
        // Runs that start in the view count the same events (a run crossing the left edge may
        // come from a level item that began earlier).
        auto inside = [&](const std::vector<DrawSpan>& spans) {
          uint64_t n = 0;
          for (const auto& s : spans)
            if (s.start >= view.visible().begin && s.end <= view.visible().end) n += s.count;
          return n;
        };
        auto wide = [](const std::vector<DrawSpan>& spans) {
          std::vector<std::pair<int64_t, int64_t>> out;
          for (const auto& s : spans)
            if (!s.narrow && s.x0 > 2) out.push_back({s.start, s.end});
          return out;
        };
        EXPECT_EQ(wide(from_levels), wide(from_raw)) << visible << " " << track << "/" << depth;
        EXPECT_NEAR(double(inside(from_levels)), double(inside(from_raw)),
                    0.02 * double(inside(from_raw)) + 2)
            << visible;
      }
  }
}

}  // namespace
}  // namespace fleetscope::timeline::test
