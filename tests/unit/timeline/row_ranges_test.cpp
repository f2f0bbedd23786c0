// The timeline reads a capture's events the same on both kinds of file: by the row ranges on a
// file without per-capture indexes (the daemon's host database) and from the (captureId, start)
// index on a one-shot file (store::capture_rows_sql, CaptureRowsUse::by_time).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fleetscope/store/database.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"
#include "fleetscope/timeline/timeline_data.h"
#include "temp_dir.h"

using namespace fleetscope;

namespace {

struct Seen {
  size_t events = 0;
  timeline::TimeRange span{};
  int64_t head_until = 0;
  size_t head_events = 0;
};

Seen seen(const std::string& path, int64_t capture) {
  store::Reader reader(path);
  Seen s;
  const timeline::TimelineData data = timeline::load_timeline(reader, capture);
  for (const auto& e : data.events) s.events += e.start.size();
  s.span = timeline::capture_span(reader, capture);
  const auto head = timeline::load_timeline_head(reader, capture, 10);
  if (head) {
    s.head_until = head->loaded_until;
    for (const auto& e : head->events) s.head_events += e.start.size();
  }
  return s;
}

}  // namespace

TEST(TimelineRowRanges, SameEventsWithRangesAndWithTheIndex) {
  test_support::TempDir dir;
  const std::string path = dir.file("host.db");
  std::vector<int64_t> captures;
  {
    store::WriterOptions options;
    options.build_indexes = false;  // as the host database: no per-capture index
    store::Writer w(store::Database::create(path), options);
    for (int c = 0; c < 3; ++c) captures.push_back(w.add_capture({.source = "test"}));
    for (int round = 0; round < 4; ++round)
      for (int64_t id : captures) {
        store::RowVectors rows;
        for (int i = 0; i < 30; ++i) {
          store::Kernel k;
          k.start = 1'000'000 * id + 10'000 * (30 * round + i);
          k.end = k.start + 5'000 + 100 * i;
          k.streamId = 7 + i % 2;
          k.demangledName = "k" + std::to_string(i % 4);
          k.captureId = id;
          rows.push(store::CpuOp{.start = k.start - 2'000,
                                 .end = k.start - 500,
                                 .globalTid = 42,
                                 .name = "aten::mm",
                                 .captureId = id});
          rows.push(std::move(k));
        }
        w.wait_committed(w.add_rows(rows, rows.size()));
      }
    w.finish();
  }
  std::vector<Seen> by_ranges;
  for (int64_t id : captures) by_ranges.push_back(seen(path, id));
  {
    store::Database db = store::Database::open(path, store::OpenMode::read_write);
    db.exec(store::index_sql());
  }
  for (size_t c = 0; c < captures.size(); ++c) {
    SCOPED_TRACE("capture " + std::to_string(captures[c]));
    const Seen by_index = seen(path, captures[c]);
    EXPECT_EQ(by_ranges[c].events, 240u);
    EXPECT_EQ(by_ranges[c].events, by_index.events);
    EXPECT_EQ(by_ranges[c].span.begin, by_index.span.begin);
    EXPECT_EQ(by_ranges[c].span.end, by_index.span.end);
    EXPECT_GT(by_ranges[c].head_until, 0);
    EXPECT_EQ(by_ranges[c].head_until, by_index.head_until);
    EXPECT_EQ(by_ranges[c].head_events, by_index.head_events);
  }
}
