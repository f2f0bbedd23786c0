#include "timeline_data.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>
#include "aggregate.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/reader.h"
#include "gui_fixture.h"
#include "range_export.h"
#include "temp_dir.h"
#include "timeline_cache.h"

namespace fleetscope::gui {
namespace {

using testing::at_us;

class TimelineDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("trace.db");
    fixture_ = testing::write_fixture(path_);
    reader_ = std::make_unique<store::Reader>(path_);
    data_ = load_timeline(*reader_, fixture_.capture);
  }
  size_t track(TrackKind kind, int32_t stream = -1) const {
    for (size_t t = 0; t < data_.tracks.size(); ++t)
      if (data_.tracks[t].key.kind == kind && data_.tracks[t].key.stream == stream) return t;
    ADD_FAILURE() << "no track";
    return 0;
  }
  test_support::TempDir dir_;
  std::string path_;
  testing::Fixture fixture_;
  std::unique_ptr<store::Reader> reader_;
  TimelineData data_;
};

TEST_F(TimelineDataTest, TracksFollowHostProcessGpuStreamThenThreads) {
  std::vector<std::string> labels;
  for (const auto& t : data_.tracks) labels.push_back(t.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"iterations", "pid 321 · GPU 0 · stream 7",
                                              "pid 321 · GPU 0 · stream 13", "tid 322 · CUDA API",
                                              "tid 322 · CPU ops"}));
  for (const auto& t : data_.tracks) EXPECT_EQ(t.host, "node-a");
  EXPECT_EQ(data_.events[track(TrackKind::gpu_stream, 7)].size(), 11u);  // 10 gemm + 1 memcpy
  EXPECT_EQ(data_.events[track(TrackKind::thread_runtime)].size(), 20u);
  EXPECT_EQ(data_.span.begin, at_us(500));
  EXPECT_EQ(data_.span.end, at_us(10950));
}

TEST_F(TimelineDataTest, AFirstPartHoldsEachTracksEarlyEventsOverTheWholeSpan) {
  // The span from the indexes equals the one of every event.
  EXPECT_EQ(capture_span(*reader_, fixture_.capture), data_.span);
  EXPECT_TRUE(data_.complete());
  // A capture whose tables all fit the part is loaded whole.
  EXPECT_FALSE(load_timeline_head(*reader_, fixture_.capture, 1000));
  const auto head = load_timeline_head(*reader_, fixture_.capture, 5);
  ASSERT_TRUE(head);
  EXPECT_TRUE(head->has_events);
  EXPECT_FALSE(head->complete());
  EXPECT_EQ(head->span, data_.span);
  const int64_t cut = head->loaded_until;
  EXPECT_GT(cut, data_.span.begin);
  EXPECT_LT(cut, data_.span.end);
  int64_t before = 0;
  for (const auto& e : data_.events)
    for (int64_t s : e.start) before += s < cut;
  EXPECT_EQ(head->event_count(), before);
  EXPECT_LT(before, data_.event_count());
  // Each track of the part: exactly the whole track's events that start before the cut, in the
  // same order (so a selection keeps its index when the rest arrives), on the same rows.
  for (size_t t = 0; t < head->tracks.size(); ++t) {
    size_t u = 0;
    while (u < data_.tracks.size() && !(data_.tracks[u].key == head->tracks[t].key)) ++u;
    ASSERT_LT(u, data_.tracks.size()) << head->tracks[t].label;
    const TrackEvents& h = head->events[t];
    const TrackEvents& f = data_.events[u];
    ASSERT_LE(h.size(), f.size());
    for (size_t i = 0; i < h.size(); ++i) {
      EXPECT_EQ(h.start[i], f.start[i]) << head->tracks[t].label << " #" << i;
      EXPECT_EQ(h.end[i], f.end[i]);
      EXPECT_EQ(h.depth[i], f.depth[i]);
      EXPECT_EQ(head->name(h.name[i]), data_.name(f.name[i]));
      EXPECT_LT(h.start[i], cut);
    }
    if (h.size() < f.size()) {
      EXPECT_GE(f.start[h.size()], cut);
    }
  }
}

TEST_F(TimelineDataTest, LevelsAreDisjointPerRowAndCountEveryEvent) {
  for (size_t t = 0; t < data_.tracks.size(); ++t) {
    ASSERT_EQ(data_.levels[t].size(), data_.rows[t].size());
    for (size_t d = 0; d < data_.levels[t].size(); ++d) {
      ASSERT_FALSE(data_.levels[t][d].empty());
      for (const ZoomLevel& level : data_.levels[t][d]) {
        uint64_t count = 0;
        for (size_t i = 0; i < level.items.size(); ++i) {
          count += level.items[i].count;
          if (i) {
            EXPECT_GE(level.items[i].start, level.items[i - 1].end);
          }
        }
        EXPECT_EQ(count, data_.rows[t][d].events.size())
            << data_.tracks[t].label << " gap " << level.gap_ns;
      }
    }
  }
}

TEST_F(TimelineDataTest, ZoomedInSpansAreTheRawEvents) {
  const size_t s7 = track(TrackKind::gpu_stream, 7);
  TimeView view(data_.span, 1000);
  view.show({at_us(900), at_us(3100)});  // 2.2 µs per pixel: below every level's gap
  const auto spans = data_.spans(s7, 0, view);
  ASSERT_EQ(spans.size(), 3u);  // gemm of steps 0, 1, 2
  for (const auto& s : spans) {
    EXPECT_EQ(data_.name(s.name), "gemm");
    EXPECT_EQ(s.count, 1u);
    EXPECT_GE(s.event, 0);
    EXPECT_EQ(s.end - s.start, 400'000);
  }
  EXPECT_NEAR(spans[0].x0, view.to_pixel(at_us(1000)), 1e-9);
}

TEST_F(TimelineDataTest, ZoomedOutSpansMergePerPixelAndStayWithinTheWidth) {
  const size_t s7 = track(TrackKind::gpu_stream, 7);
  TimeView view(data_.span, 8);  // 8 pixels for 10.45 ms: many events per pixel
  const auto spans = data_.spans(s7, 0, view);
  EXPECT_LE(spans.size(), 8u);
  uint64_t count = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    count += spans[i].count;
    EXPECT_GE(spans[i].x1 - spans[i].x0, 1.0);
    if (i) {
      EXPECT_GE(spans[i].x0, spans[i - 1].x1);
    }
  }
  EXPECT_EQ(count, 11u);
}

TEST_F(TimelineDataTest, EventAtFindsTheKernelUnderATime) {
  const size_t s7 = track(TrackKind::gpu_stream, 7);
  const int64_t e = data_.event_at(s7, at_us(2100));
  ASSERT_GE(e, 0);
  EXPECT_EQ(data_.events[s7].start[size_t(e)], at_us(2000));
  EXPECT_EQ(data_.event_at(s7, at_us(2600)), -1);  // idle
}

TEST_F(TimelineDataTest, AggregateOfARangeEqualsTheSqlAnswer) {
  const TimeRange range{at_us(1200), at_us(3500)};
  std::map<std::string, std::pair<int64_t, int64_t>> expected;
  auto st = reader_->database().prepare(
      "SELECT s.value, COUNT(*), SUM(MIN(k.end, ?2) - MAX(k.start, ?1)) FROM "
      "CUPTI_ACTIVITY_KIND_KERNEL k "
      "JOIN StringIds s ON s.id = k.shortName WHERE k.start < ?2 AND k.end > ?1 GROUP BY 1");
  st.bind(1, range.begin).bind(2, range.end);
  while (st.step()) expected[st.column_text(0)] = {st.column_int(1), st.column_int(2)};
  ASSERT_EQ(expected.size(), 2u);
  std::map<std::string, std::pair<int64_t, int64_t>> got;
  for (const auto& row : aggregate_range(data_, range))
    if (row.kind == EventKind::kernel) got[row.name] = {row.count, row.total_ns};
  EXPECT_EQ(got, expected);
  // gemm: 200 µs of step 0, then 400 + 400 µs of steps 1 and 2.
  EXPECT_EQ(got["gemm"], (std::pair<int64_t, int64_t>{3, 1'000'000}));
}

TEST_F(TimelineDataTest, CacheRoundTripsAndIsIgnoredWhenTheDatabaseChanges) {
  ASSERT_TRUE(save_timeline_cache(path_, data_));
  auto cached = load_timeline_cache(path_, fixture_.capture);
  ASSERT_TRUE(cached);
  EXPECT_FALSE(cached->has_events);
  EXPECT_EQ(cached->span, data_.span);
  ASSERT_EQ(cached->tracks.size(), data_.tracks.size());
  for (size_t t = 0; t < data_.tracks.size(); ++t) {
    EXPECT_EQ(cached->tracks[t].label, data_.tracks[t].label);
    // A small capture fits the budget: every level is cached.
    ASSERT_EQ(cached->levels[t].size(), data_.levels[t].size());  // one per row
    for (size_t d = 0; d < data_.levels[t].size(); ++d) {
      ASSERT_EQ(cached->levels[t][d].size(), data_.levels[t][d].size());
      for (size_t l = 0; l < data_.levels[t][d].size(); ++l) {
        EXPECT_EQ(cached->levels[t][d][l].gap_ns, data_.levels[t][d][l].gap_ns);
        EXPECT_EQ(cached->levels[t][d][l].items.size(), data_.levels[t][d][l].items.size());
      }
    }
  }
  // Painting from the cache alone: the finest level, merged per pixel.
  TimeView view(cached->span, 100);
  EXPECT_FALSE(cached->spans(1, 0, view).empty());
  EXPECT_FALSE(load_timeline_cache(path_, fixture_.capture + 1));  // another capture
  // A changed database file (new size and time): the cache no longer applies.
  { std::ofstream(path_, std::ios::app) << "x"; }
  std::filesystem::last_write_time(
      path_, std::filesystem::last_write_time(path_) + std::chrono::seconds(5));
  EXPECT_FALSE(load_timeline_cache(path_, fixture_.capture));
}

TEST_F(TimelineDataTest, CacheKeepsTheCoarsestLevelsWithinItsBudget) {
  // One dense track: 20,000 events of 500 ns, gaps of 0.1 µs · 2^(i mod 16), so many levels exist.
  TimelineData dense;
  dense.capture_id = fixture_.capture;
  dense.tracks.push_back({});
  dense.events.emplace_back();
  const int32_t name = dense.intern("k");
  int64_t t = 0;
  for (int i = 0; i < 20'000; ++i) {
    t += 100 * (int64_t{1} << (i % 16));
    dense.events[0].start.push_back(t);
    dense.events[0].end.push_back(t + 500);
    dense.events[0].name.push_back(name);
    dense.events[0].kind.push_back(EventKind::kernel);
    t += 500;
  }
  dense.finalize();
  const auto& all = dense.levels[0][0];
  ASSERT_GE(all.size(), 3u);
  // A budget that holds the two coarsest levels and not the third.
  const uint64_t budget = all[all.size() - 1].items.size() + all[all.size() - 2].items.size();
  ASSERT_GT(budget + all[all.size() - 3].items.size(), budget);
  ASSERT_TRUE(save_timeline_cache(path_, dense, budget));
  auto cached = load_timeline_cache(path_, fixture_.capture);
  ASSERT_TRUE(cached);
  const auto& kept = cached->levels[0][0];
  ASSERT_FALSE(kept.empty());
  EXPECT_EQ(kept.size(), 2u);  // the fine levels were left out
  uint64_t items = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    // The cached levels are the coarsest ones.
    EXPECT_EQ(kept[i].gap_ns, all[all.size() - kept.size() + i].gap_ns);
    items += kept[i].items.size();
  }
  EXPECT_EQ(items, budget);
  TimeView view(cached->span, 200);
  EXPECT_FALSE(cached->spans(0, 0, view).empty());
}

TEST_F(TimelineDataTest, ADamagedCacheIsIgnored) {
  ASSERT_TRUE(save_timeline_cache(path_, data_));
  const std::string cache = timeline_cache_path(path_, fixture_.capture);
  std::filesystem::resize_file(cache, std::filesystem::file_size(cache) / 2);
  EXPECT_FALSE(load_timeline_cache(path_, fixture_.capture));
}

TEST_F(TimelineDataTest, AChangedOrOversizedCacheIsNotParsed) {
  ASSERT_TRUE(save_timeline_cache(path_, data_));
  const std::string cache = timeline_cache_path(path_, fixture_.capture);
  {
    // One byte changed in the middle: its checksum no longer holds.
    std::fstream f(cache, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(cache) / 2));
    f.put('\x7f');
  }
  EXPECT_FALSE(load_timeline_cache(path_, fixture_.capture));
  // A file far larger than any cache (sparse: it costs no disk) is not read at all.
  std::filesystem::resize_file(cache, uint64_t{300} << 20);
  EXPECT_FALSE(load_timeline_cache(path_, fixture_.capture));
  // A fresh cache replaces it.
  ASSERT_TRUE(save_timeline_cache(path_, data_));
  EXPECT_LT(std::filesystem::file_size(cache), uint64_t{1} << 20);
  EXPECT_TRUE(load_timeline_cache(path_, fixture_.capture));
}

TEST_F(TimelineDataTest, ALinkAtTheCachePathIsNeitherReadNorWrittenThrough) {
  const std::string cache = timeline_cache_path(path_, fixture_.capture);
  const std::string victim = dir_.file("victim.txt");
  { std::ofstream(victim) << "keep me"; }
  std::filesystem::create_symlink(victim, cache);
  // The old fixed temporary name too.
  std::filesystem::create_symlink(victim, cache + ".tmp");
  EXPECT_FALSE(load_timeline_cache(path_, fixture_.capture));
  ASSERT_TRUE(save_timeline_cache(path_, data_));
  std::ifstream in(victim);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "keep me");
  EXPECT_FALSE(std::filesystem::is_symlink(cache));  // replaced by the cache, not followed
  EXPECT_TRUE(load_timeline_cache(path_, fixture_.capture));
}

TEST_F(TimelineDataTest, ADatabaseInAFolderOthersMayWriteKeepsItsCacheInTheUsersOwn) {
  const std::string shared = dir_.file("shared");
  std::filesystem::create_directory(shared);
  std::filesystem::permissions(shared, std::filesystem::perms::all);  // 0777, like /tmp
  const std::string db = shared + "/trace.db";
  std::filesystem::copy_file(path_, db);
  const std::string own = dir_.file("own-cache");
  ::setenv("XDG_CACHE_HOME", own.c_str(), 1);
  const std::string cache = timeline_cache_path(db, fixture_.capture);
  EXPECT_EQ(cache.rfind(own + "/fleetscope/", 0), 0u) << cache;
  ASSERT_TRUE(save_timeline_cache(db, data_));
  EXPECT_TRUE(load_timeline_cache(db, fixture_.capture));
  EXPECT_FALSE(
      std::filesystem::exists(db + ".capture" + std::to_string(fixture_.capture) + ".zoom"));
  ::unsetenv("XDG_CACHE_HOME");
}

TEST_F(TimelineDataTest, ExportsTheVisibleRangeAsAChromeTrace) {
  const std::string out = dir_.file("range.json");
  const int64_t written = export_range_chrome(data_, {at_us(1200), at_us(3500)}, out);
  const auto doc = nlohmann::json::parse(std::ifstream(out));
  std::map<std::string, int> by_name;
  int complete = 0;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X") ++complete, ++by_name[e["name"].get<std::string>()];
  EXPECT_EQ(complete, written);
  EXPECT_EQ(by_name["gemm"], 3);  // steps 0 (overlapping the start), 1 and 2
  EXPECT_EQ(by_name["relu"], 3);
  EXPECT_EQ(by_name["cudaLaunchKernel"], 5);
  EXPECT_EQ(doc["baseTimeNanoseconds"], at_us(1200));
  EXPECT_THROW(export_range_chrome(data_, {0, 1}, dir_.file("no/such/dir/x.json")), Error);
}

// The range export goes through the one atomic-output path (store::AtomicOutput, a new temporary
// file of its own): it wrote "<out>.tmp" with std::ofstream, so a symbolic link planted under that
// fixed name in a shared folder had the trace written into the file the link named.
TEST_F(TimelineDataTest, RangeExportDoesNotWriteThroughAPlantedLink) {
  const std::string victim = dir_.file("victim.txt");
  std::ofstream(victim) << "precious";
  const std::string out = dir_.file("range.json");
  std::filesystem::create_symlink(victim, out + ".tmp");
  EXPECT_GT(export_range_chrome(data_, {at_us(1200), at_us(3500)}, out), 0);
  std::ifstream in(victim);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "precious");
  EXPECT_FALSE(std::filesystem::is_symlink(out));
  EXPECT_TRUE(nlohmann::json::parse(std::ifstream(out)).contains("traceEvents"));
}

TEST_F(TimelineDataTest, LoadingStopsWhenCancelled) {
  std::atomic<bool> cancel{true};
  TimelineLoadOptions options;
  options.cancel = &cancel;
  EXPECT_THROW(load_timeline(*reader_, fixture_.capture, options), LoadCancelled);
}

}  // namespace
}  // namespace fleetscope::gui

namespace fleetscope::gui {
namespace {

// `fleetscope import` writes each capture's zoom levels once the database is in place, so the
// GUI's first open of a freshly imported capture finds them: the same tracks and levels as the
// ones built from the raw events.
TEST(TimelineSummaryAtImport, ImportedDatabaseOpensFromTheSummaryWrittenAtImport) {
  test_support::TempDir dir;
  const std::string db = dir.file("imported.db");
  const auto results =
      importers::import_files({std::string(FLEETSCOPE_SOURCE_DIR) +
                               "/samples/traces/hta-critical_path_alexnet_trace.json.gz"},
                              db);
  ASSERT_EQ(results.size(), 1u);
  const int64_t capture = results[0].capture_id;
  ASSERT_TRUE(std::filesystem::exists(timeline_cache_path(db, capture)));
  auto cached = load_timeline_cache(db, capture);
  ASSERT_TRUE(cached);
  const store::Reader reader(db);
  const TimelineData built = load_timeline(reader, capture);
  EXPECT_GT(built.event_count(), 0);
  EXPECT_EQ(cached->span, built.span);
  ASSERT_EQ(cached->tracks.size(), built.tracks.size());
  for (size_t t = 0; t < built.tracks.size(); ++t) {
    EXPECT_EQ(cached->tracks[t].key, built.tracks[t].key);
    ASSERT_EQ(cached->levels[t].size(), built.levels[t].size());
    for (size_t d = 0; d < built.levels[t].size(); ++d) {
      ASSERT_EQ(cached->levels[t][d].size(), built.levels[t][d].size());
      for (size_t l = 0; l < built.levels[t][d].size(); ++l) {
        const auto& a = cached->levels[t][d][l].items;
        const auto& b = built.levels[t][d][l].items;
        ASSERT_EQ(a.size(), b.size()) << t << "/" << d << "/" << l;
        for (size_t i = 0; i < a.size(); ++i) {
          EXPECT_EQ(a[i].start, b[i].start);
          EXPECT_EQ(a[i].end, b[i].end);
          EXPECT_EQ(a[i].count, b[i].count);
          EXPECT_EQ(cached->name(a[i].name), built.name(b[i].name));
        }
      }
    }
  }
}

}  // namespace
}  // namespace fleetscope::gui
