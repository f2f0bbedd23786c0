// One capture's events as the timeline draws them: tracks (host > process > GPU > stream, and
// host threads), each a stack of rows, and precomputed zoom levels per row.
//
// Rows (flame-style, as Perfetto and nsys draw CPU slices): on a thread's track (CUDA API, NVTX,
// CPU ops) an event that starts inside an earlier one that is still open sits one row below it,
// so row d holds the events of nesting depth d (nesting_depths()). Events of one row never
// overlap. A GPU stream and the iterations track are one row each (depth 0): their work is
// serial, and an overlap there is drawn, not nested.
//
// Merging (per row, never across rows): an event that covers at least a pixel is always drawn on
// its own; only neighbours that are each narrower than a pixel (or already merged) and closer
// than a pixel join into one run, which says how many events it holds. So a parent never swallows
// its children (they are on the next row) and back-to-back steps stay separate bars.
//
// Zoom levels: level k of a row applies that merge for a pixel of gap_k = 1 µs · 4^k: items
// shorter than gap_k whose gap is below gap_k join (and overlapping items always join, so a level's
// items are disjoint and sorted by start and by end). When one pixel covers ns_per_pixel ≥ gap_k,
// level k is what per-pixel merging of the raw events would draw anyway, so painting reads the
// coarsest level with gap_k ≤ ns_per_pixel and touches O(width) items per row whatever the zoom.
// A level is kept only when it holds at most half the items of the next finer one kept (or of the
// raw events), so all levels of a row together hold at most as many items as the row has events
// (plus its coarsest level, always kept, and level 0 of a row of at most small_row_events, kept so
// the cached summary alone draws rows of a few long events, such as steps, unmerged): memory
// stays proportional to the capture.
// Levels are built once per capture when it is written (the importer runs
// write_capture_summaries) and cached beside the database (timeline_cache.h), so the first open
// of a capture paints from the cache before its raw events are loaded (staged loading).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fleetscope/timeline/time_view.h"

namespace fleetscope::store {
class Reader;
}

namespace fleetscope::timeline {

enum class EventKind : uint8_t { kernel, memcpy, memset, runtime, nvtx, cpu_op, iteration };
const char* to_string(EventKind kind);

enum class TrackKind : uint8_t { iterations, gpu_stream, thread_runtime, thread_nvtx, thread_cpu };
const char* to_string(TrackKind kind);

struct TrackKey {
  TrackKind kind = TrackKind::gpu_stream;
  int64_t global_pid = -1;  // nsys-encoded; -1 = unknown process
  int32_t device = -1, stream = -1;
  int64_t global_tid = -1;
  bool operator==(const TrackKey&) const = default;
  bool operator<(const TrackKey& o) const;
};

struct Track {
  TrackKey key;
  int64_t host_id = -1;
  std::string host;   // hostname, or "" when unknown
  std::string label;  // "GPU 0 · stream 7", "thread 42 · CUDA API", ...
};

// Events of one track, sorted by start (ties: the longer first, so a parent precedes its
// children), as columns.
struct TrackEvents {
  std::vector<int64_t> start, end;
  std::vector<int32_t> name;  // TimelineData::names index
  std::vector<EventKind> kind;
  std::vector<uint16_t> depth;  // row; filled by TimelineData::finalize()
  int64_t max_duration = 0;
  size_t size() const { return start.size(); }
};

// The events of one row of a track: indices into its TrackEvents, in start order.
struct RowEvents {
  std::vector<uint32_t> events;
  int64_t max_duration = 0;
  bool disjoint = true;  // no two overlap (so their ends are sorted too): not so on GPU streams
};

// Nesting depth of each event (input sorted by start, ties longer first): the number of earlier
// events still open when it starts, capped at max_depth − 1. Events of one depth never overlap
// (except on the capped last row, which then draws them overlapping).
std::vector<uint16_t> nesting_depths(const std::vector<int64_t>& start,
                                     const std::vector<int64_t>& end, size_t max_depth);
// Whether a track's events are stacked by nesting (thread tracks) or kept on one row.
bool is_nested(TrackKind kind);

struct LevelItem {
  int64_t start = 0, end = 0;
  int32_t name = 0;  // the longest member's
  EventKind kind = EventKind::kernel;
  uint32_t count = 0;
};

struct ZoomLevel {
  int64_t gap_ns = 0;
  std::vector<LevelItem> items;  // sorted by start, disjoint
  int64_t max_duration = 0;
};

// The levels of one row, gap ascending.
using RowLevels = std::vector<ZoomLevel>;

// What one pixel run of a row draws.
struct DrawSpan {
  double x0 = 0, x1 = 0;
  int32_t name = 0;
  EventKind kind = EventKind::kernel;
  uint32_t count = 0;
  int64_t start = 0, end = 0;
  int64_t event = -1;   // index in the track's events when it is exactly one raw event
  bool narrow = false;  // made of events narrower than a pixel (may merge with such a neighbour)
  int64_t longest = 0;  // duration of the member that names the run
};

// Merges the items of one row (sorted by start) for a pixel of `gap` ns (see above).
ZoomLevel merge_level(const std::vector<LevelItem>& items, int64_t gap);

struct LoadCancelled : std::exception {
  const char* what() const noexcept override { return "cancelled"; }
};

class TimelineData {
 public:
  int64_t capture_id = 0;
  TimeRange span{0, 1};
  std::vector<Track> tracks;                   // in display order
  std::vector<TrackEvents> events;             // per track; empty until the raw stage
  std::vector<std::vector<RowEvents>> rows;    // per track, per depth; empty until the raw stage
  std::vector<std::vector<RowLevels>> levels;  // per track, per depth
  std::vector<std::string> names;              // index → text
  bool has_events = false;                     // raw events loaded (not only the cache)
  // A first part (load_timeline_head): only the events that start before this time are loaded,
  // the rest is still being read; `span` is the whole capture's all the same. INT64_MAX: all.
  int64_t loaded_until = INT64_MAX;
  bool complete() const { return has_events && loaded_until == INT64_MAX; }

  int32_t intern(const std::string& text);
  const std::string& name(int32_t index) const { return names.at(size_t(index)); }
  int64_t event_count() const;

  // Rows of a track (1 for a GPU stream); known from the levels before the raw events load.
  size_t depth_count(size_t track) const {
    return track < levels.size() ? std::max<size_t>(1, levels[track].size()) : 1;
  }
  // Sorts every track, nests its events into rows, records max durations, builds the levels.
  void finalize();
  // The runs to draw on row `depth` of `track` for the visible range of `view`: raw events (or
  // the level chosen as above) merged per pixel; each run covers at least one pixel, runs are
  // disjoint and in order.
  std::vector<DrawSpan> spans(size_t track, size_t depth, const TimeView& view) const;
  // The raw event under time `ns` on a track (the latest-starting one containing it, i.e. the
  // deepest), or -1.
  int64_t event_at(size_t track, int64_t ns, int64_t slack_ns = 0) const;
  // The raw event under time `ns` on one row of a track, or -1.
  int64_t event_at(size_t track, size_t depth, int64_t ns, int64_t slack_ns) const;
  // Index of the first level item/event that may overlap `begin` (binary search on start).
  static size_t first_overlapping(const std::vector<int64_t>& starts, int64_t begin,
                                  int64_t max_duration);

  static constexpr int64_t base_gap_ns = 1000;
  static constexpr int level_count = 12;  // 1 µs … 4^11 µs ≈ 4.2 s
  static constexpr size_t small_row_events = 4096;
  static constexpr size_t max_depth = 256;  // deeper events share the last row

 private:
  std::unordered_map<std::string, int32_t> index_;
};

struct TimelineLoadOptions {
  std::function<void(const std::string& stage, int64_t rows)> progress;
  const std::atomic<bool>* cancel = nullptr;  // checked every few thousand rows
  // Only the events that start before this time (a first part: TimelineData::loaded_until).
  int64_t until = INT64_MAX;
};

// Everything: tracks, raw events and zoom levels. Throws LoadCancelled when cancelled.
TimelineData load_timeline(const store::Reader& reader, int64_t capture_id,
                           const TimelineLoadOptions& options = {});

// The capture's span as load_timeline computes it (first start to last end over its events),
// read from the indexes on start and the stored maximum durations instead of every row.
TimeRange capture_span(const store::Reader& reader, int64_t capture_id);

// The first part of a large capture, for a first paint before its events are all read (staged
// loading when there is no zoom summary): every table's events that start before the time by
// which the first table reaches `events` events in start order (read through the indexes on
// start), nested into rows and levelled as load_timeline does, with `span` the whole capture's
// (capture_span) and `loaded_until` that time. Nothing when no table of the capture has more
// than `events` events (load it whole: it is as quick).
std::optional<TimelineData> load_timeline_head(const store::Reader& reader, int64_t capture_id,
                                               int64_t events,
                                               const TimelineLoadOptions& options = {});

}  // namespace fleetscope::timeline
