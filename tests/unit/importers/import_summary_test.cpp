// The timeline summary an import writes beside its database is built while the writer builds its
// indexes (store::Writer::finish's alongside work, on a second connection): it must match the
// levels built from the finished database, for every capture of a multi-file import.
#include <gtest/gtest.h>

#include <algorithm>

#include "fleetscope/importers/importers.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/timeline/timeline_cache.h"
#include "importer_test_util.h"

namespace fleetscope::importers::test {
namespace {

TEST(ImportSummary, BuiltDuringTheIndexBuildMatchesTheFinishedDatabase) {
  ASSERT_TRUE(fs::exists(kineto_dir())) << "shared reference data missing: " << kineto_dir();
  ScratchDir dir;
  const std::string out = dir.file("two.db");
  import_files({kineto_dir() + "/hta-nccl_parser_config_nccl_data.json.gz",
                kineto_dir() + "/hta-critical_path_alexnet_trace.json.gz"},
               out);
  const store::Reader reader(out);
  ASSERT_EQ(reader.captures().size(), 2u);
  for (const auto& capture : reader.captures()) {
    SCOPED_TRACE("capture " + std::to_string(capture.id));
    const auto cached = timeline::load_timeline_cache(out, capture.id);
    ASSERT_TRUE(cached.has_value());
    const timeline::TimelineData fresh = timeline::load_timeline(reader, capture.id);
    // Name indices follow the order rows were read in (the table before its indexes exist, an
    // index after): compare the texts.
    auto sorted = [](std::vector<std::string> v) {
      std::sort(v.begin(), v.end());
      return v;
    };
    EXPECT_EQ(sorted(cached->names), sorted(fresh.names));
    EXPECT_EQ(cached->span.begin, fresh.span.begin);
    EXPECT_EQ(cached->span.end, fresh.span.end);
    ASSERT_EQ(cached->tracks.size(), fresh.tracks.size());
    size_t levels = 0;
    for (size_t t = 0; t < fresh.tracks.size(); ++t) {
      EXPECT_EQ(cached->tracks[t].label, fresh.tracks[t].label);
      ASSERT_EQ(cached->levels[t].size(), fresh.levels[t].size());  // rows by nesting depth
      for (size_t depth = 0; depth < fresh.levels[t].size(); ++depth)
        for (const auto& level : cached->levels[t][depth]) {
          const timeline::ZoomLevel* same = nullptr;
          for (const auto& f : fresh.levels[t][depth])
            if (f.gap_ns == level.gap_ns) same = &f;
          ASSERT_NE(same, nullptr);
          ASSERT_EQ(level.items.size(), same->items.size());
          for (size_t i = 0; i < level.items.size(); ++i) {
            EXPECT_EQ(level.items[i].start, same->items[i].start);
            EXPECT_EQ(level.items[i].end, same->items[i].end);
            EXPECT_EQ(level.items[i].count, same->items[i].count);
            EXPECT_EQ(cached->name(level.items[i].name), fresh.name(same->items[i].name));
          }
          ++levels;
        }
    }
    EXPECT_GT(levels, 0u);
  }
}

}  // namespace
}  // namespace fleetscope::importers::test
