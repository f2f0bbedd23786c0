// One capture's events as the timeline draws them: tracks (host > process > GPU > stream, and
// host threads), each with its events sorted by start, and precomputed zoom levels.
//
// Zoom levels: level k merges a track's events whose gap is below gap_k = 1 µs · 4^k into one
// item (count, extent, and the name and kind of its longest member, which decides the colour).
// When one pixel covers ns_per_pixel ≥ gap_k, the items of level k are what per-pixel merging of
// the raw events would draw anyway (gaps below a pixel vanish), so painting reads the coarsest
// level with gap_k ≤ ns_per_pixel and touches O(width) items per track whatever the zoom level.
// Levels are built once per capture when it is written (the importer runs
// write_capture_summaries) and cached beside the database (timeline_cache.h), so the first open
// of a capture paints from the cache before its raw events are loaded (staged loading).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
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

// Events of one track, sorted by start, as columns.
struct TrackEvents {
  std::vector<int64_t> start, end;
  std::vector<int32_t> name;  // TimelineData::names index
  std::vector<EventKind> kind;
  int64_t max_duration = 0;
  size_t size() const { return start.size(); }
};

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

// What one pixel run of a track draws.
struct DrawSpan {
  double x0 = 0, x1 = 0;
  int32_t name = 0;
  EventKind kind = EventKind::kernel;
  uint32_t count = 0;
  int64_t start = 0, end = 0;
  int64_t event = -1;  // index in the track's events when it is exactly one raw event
};

struct LoadCancelled : std::exception {
  const char* what() const noexcept override { return "cancelled"; }
};

class TimelineData {
 public:
  int64_t capture_id = 0;
  TimeRange span{0, 1};
  std::vector<Track> tracks;                   // in display order
  std::vector<TrackEvents> events;             // per track; empty until the raw stage
  std::vector<std::vector<ZoomLevel>> levels;  // per track, gap ascending
  std::vector<std::string> names;              // index → text
  bool has_events = false;                     // raw events loaded (not only the cache)

  int32_t intern(const std::string& text);
  const std::string& name(int32_t index) const { return names.at(size_t(index)); }
  int64_t event_count() const;

  // Sorts every track, records max durations, builds the zoom levels.
  void finalize();
  // The runs to draw on track `track` for the visible range of `view`: raw events (or the level
  // chosen as above) merged per pixel; each run covers at least one pixel.
  std::vector<DrawSpan> spans(size_t track, const TimeView& view) const;
  // The raw event under time `ns` on a track (the latest-starting one containing it), or -1.
  int64_t event_at(size_t track, int64_t ns, int64_t slack_ns = 0) const;
  // Index of the first level item/event that may overlap `begin` (binary search on start).
  static size_t first_overlapping(const std::vector<int64_t>& starts, int64_t begin,
                                  int64_t max_duration);

  static constexpr int64_t base_gap_ns = 1000;
  static constexpr int level_count = 12;  // 1 µs … 4^11 µs ≈ 4.2 s

 private:
  std::unordered_map<std::string, int32_t> index_;
};

struct TimelineLoadOptions {
  std::function<void(const std::string& stage, int64_t rows)> progress;
  const std::atomic<bool>* cancel = nullptr;  // checked every few thousand rows
};

// Everything: tracks, raw events and zoom levels. Throws LoadCancelled when cancelled.
TimelineData load_timeline(const store::Reader& reader, int64_t capture_id,
                           const TimelineLoadOptions& options = {});

}  // namespace fleetscope::timeline
