#include "fleetscope/timeline/timeline_data.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include "fleetscope/store/capture_rows.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::timeline {

const char* to_string(EventKind kind) {
  switch (kind) {
    case EventKind::kernel:
      return "kernel";
    case EventKind::memcpy:
      return "memcpy";
    case EventKind::memset:
      return "memset";
    case EventKind::runtime:
      return "CUDA API";
    case EventKind::nvtx:
      return "NVTX";
    case EventKind::cpu_op:
      return "CPU op";
    case EventKind::iteration:
      return "iteration";
  }
  return "?";
}

const char* to_string(TrackKind kind) {
  switch (kind) {
    case TrackKind::iterations:
      return "iterations";
    case TrackKind::gpu_stream:
      return "stream";
    case TrackKind::thread_runtime:
      return "CUDA API";
    case TrackKind::thread_nvtx:
      return "NVTX";
    case TrackKind::thread_cpu:
      return "CPU ops";
  }
  return "?";
}

bool TrackKey::operator<(const TrackKey& o) const {
  // Display order inside a process: iterations, GPU streams by device and stream, then threads.
  auto rank = [](TrackKind k) {
    return k == TrackKind::iterations ? 0 : k == TrackKind::gpu_stream ? 1 : 2;
  };
  return std::tuple(store::pid_of(global_pid), rank(kind), device, stream, global_tid, int(kind)) <
         std::tuple(store::pid_of(o.global_pid), rank(o.kind), o.device, o.stream, o.global_tid,
                    int(o.kind));
}

int32_t TimelineData::intern(const std::string& text) {
  auto [it, added] = index_.emplace(text, int32_t(names.size()));
  if (added) names.push_back(text);
  return it->second;
}

int64_t TimelineData::event_count() const {
  int64_t n = 0;
  for (const auto& e : events) n += int64_t(e.size());
  return n;
}

size_t TimelineData::first_overlapping(const std::vector<int64_t>& starts, int64_t begin,
                                       int64_t max_duration) {
  // Anything starting before begin − max_duration ends before begin.
  const int64_t from = begin - max_duration;
  return size_t(std::lower_bound(starts.begin(), starts.end(), from) - starts.begin());
}

bool is_nested(TrackKind kind) {
  return kind == TrackKind::thread_runtime || kind == TrackKind::thread_nvtx ||
         kind == TrackKind::thread_cpu;
}

std::vector<uint16_t> nesting_depths(const std::vector<int64_t>& start,
                                     const std::vector<int64_t>& end, size_t max_depth) {
  std::vector<uint16_t> depth(start.size());
  std::vector<int64_t> open_ends;  // the ends of the enclosing events, innermost last
  const size_t cap = std::max<size_t>(1, max_depth) - 1;
  for (size_t i = 0; i < start.size(); ++i) {
    while (!open_ends.empty() && open_ends.back() <= start[i]) open_ends.pop_back();
    depth[i] = uint16_t(std::min(open_ends.size(), cap));
    open_ends.push_back(end[i]);
  }
  return depth;
}

ZoomLevel merge_level(const std::vector<LevelItem>& items, int64_t gap) {
  ZoomLevel level;
  level.gap_ns = gap;
  // Narrower than the pixel this level stands for, or already a merged run.
  auto narrow = [gap](const LevelItem& x) { return x.count > 1 || x.end - x.start < gap; };
  LevelItem open;
  int64_t open_longest = -1;
  for (const LevelItem& item : items) {
    const int64_t len = item.end - item.start;
    const bool overlaps = item.start < open.end;
    if (open_longest >= 0 &&
        (overlaps || (narrow(open) && narrow(item) && item.start - open.end < gap))) {
      open.end = std::max(open.end, item.end);
      open.count += item.count;
      if (len > open_longest) open_longest = len, open.name = item.name, open.kind = item.kind;
      continue;
    }
    if (open_longest >= 0) level.items.push_back(open);
    open = item;
    open_longest = len;
  }
  if (open_longest >= 0) level.items.push_back(open);
  for (const auto& it : level.items)
    level.max_duration = std::max(level.max_duration, it.end - it.start);
  return level;
}

namespace {

void sort_track(TrackEvents& e) {
  auto before = [&](size_t a, size_t b) {
    return e.start[a] != e.start[b] ? e.start[a] < e.start[b] : e.end[a] > e.end[b];
  };
  bool sorted = true;
  for (size_t i = 1; i < e.size() && sorted; ++i) sorted = !before(i, i - 1);
  if (sorted) return;
  std::vector<uint32_t> order(e.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), before);
  TrackEvents out;
  out.start.reserve(e.size());
  out.end.reserve(e.size());
  out.name.reserve(e.size());
  out.kind.reserve(e.size());
  for (uint32_t i : order) {
    out.start.push_back(e.start[i]);
    out.end.push_back(e.end[i]);
    out.name.push_back(e.name[i]);
    out.kind.push_back(e.kind[i]);
  }
  e = std::move(out);
}

// The kept levels of one row (see the header): level 0 from the raw items, each next from the
// previous one; a level that does not halve its input is left out (the finer data draws as
// cheaply), except level 0 of a small row (so the cached summary alone draws a few long events,
// such as steps, unmerged at every zoom), and the coarsest is always kept.
RowLevels build_levels(const std::vector<LevelItem>& raw) {
  RowLevels kept;
  size_t below = raw.size();
  ZoomLevel level = merge_level(raw, TimelineData::base_gap_ns);
  for (int k = 0;; ++k) {
    const bool last = k + 1 == TimelineData::level_count || level.items.size() <= 1;
    ZoomLevel next;
    if (!last) next = merge_level(level.items, level.gap_ns * 4);
    const bool small_row = k == 0 && raw.size() <= TimelineData::small_row_events;
    if (level.items.size() * 2 <= below || last || small_row) {
      below = level.items.size();
      kept.push_back(std::move(level));
    }
    if (last) break;
    level = std::move(next);
  }
  return kept;
}

// Index of the first of `idx` (sorted by start) whose event may end after `begin`.
size_t first_in_row(const TrackEvents& e, const RowEvents& row, int64_t begin) {
  if (row.disjoint)  // ends are sorted too
    return size_t(std::upper_bound(row.events.begin(), row.events.end(), begin,
                                   [&](int64_t t, uint32_t i) { return t < e.end[i]; }) -
                  row.events.begin());
  const int64_t from = begin - row.max_duration;
  return size_t(std::lower_bound(row.events.begin(), row.events.end(), from,
                                 [&](uint32_t i, int64_t t) { return e.start[i] < t; }) -
                row.events.begin());
}

}  // namespace

void TimelineData::finalize() {
  levels.assign(events.size(), {});
  rows.assign(events.size(), {});
  span = {INT64_MAX, INT64_MIN};
  for (size_t t = 0; t < events.size(); ++t) {
    TrackEvents& e = events[t];
    sort_track(e);
    const bool nested = t < tracks.size() && is_nested(tracks[t].key.kind);
    e.depth =
        nested ? nesting_depths(e.start, e.end, max_depth) : std::vector<uint16_t>(e.size(), 0);
    e.max_duration = 0;
    auto& track_rows = rows[t];
    for (size_t i = 0; i < e.size(); ++i) {
      const int64_t len = e.end[i] - e.start[i];
      e.max_duration = std::max(e.max_duration, len);
      span.begin = std::min(span.begin, e.start[i]);
      span.end = std::max(span.end, e.end[i]);
      if (e.depth[i] >= track_rows.size()) track_rows.resize(size_t(e.depth[i]) + 1);
      RowEvents& row = track_rows[e.depth[i]];
      if (!row.events.empty() && e.start[i] < e.end[row.events.back()]) row.disjoint = false;
      row.events.push_back(uint32_t(i));
      row.max_duration = std::max(row.max_duration, len);
    }
    for (const RowEvents& row : track_rows) {
      std::vector<LevelItem> raw;
      raw.reserve(row.events.size());
      for (uint32_t i : row.events) raw.push_back({e.start[i], e.end[i], e.name[i], e.kind[i], 1});
      levels[t].push_back(build_levels(raw));
    }
  }
  if (span.begin >= span.end) span = {0, 1};
  has_events = true;
}

std::vector<DrawSpan> TimelineData::spans(size_t track, size_t depth, const TimeView& view) const {
  std::vector<DrawSpan> out;
  const TimeRange vis = view.visible();
  const double npp = view.ns_per_pixel();
  auto emit = [&](int64_t s, int64_t e, int32_t name, EventKind kind, uint32_t count, int64_t idx) {
    double x0 = view.to_pixel(s), x1 = view.to_pixel(e);
    const bool narrow = count > 1 || x1 - x0 < 1.0;
    x0 = std::max(-1.0, x0);
    x1 = std::min(view.width() + 1, x1);
    if (!out.empty()) {
      DrawSpan& last = out.back();
      // Per-pixel merging: only runs of sub-pixel events closer than a pixel join.
      if (last.narrow && narrow && x0 < last.x1 + 1.0) {
        last.x1 = std::max(last.x1, x1);
        if (e - s > last.longest) last.longest = e - s, last.name = name, last.kind = kind;
        last.end = std::max(last.end, e);
        last.count += count;
        last.event = -1;
        return;
      }
      if (x1 <= last.x1) return;  // hidden under an overlapping wider event (GPU rows only)
      x0 = std::max(x0, last.x1);
    }
    if (x1 - x0 < 1.0) x1 = x0 + 1.0;
    out.push_back({x0, x1, name, kind, count, s, e, idx, narrow, e - s});
  };
  // The coarsest level whose gap a pixel hides, if the raw events are not loaded the finest.
  const ZoomLevel* level = nullptr;
  if (track < levels.size() && depth < levels[track].size())
    for (const ZoomLevel& l : levels[track][depth])
      if (double(l.gap_ns) <= npp || (!has_events && !level)) level = &l;
  // Raw events when no level hides a pixel's gap, or when the level merged nothing (as cheap,
  // and each run then knows its event).
  const bool raw = has_events && track < rows.size() && depth < rows[track].size() &&
                   (!level || double(level->gap_ns) > npp ||
                    level->items.size() == rows[track][depth].events.size());
  if (raw) {
    const TrackEvents& e = events[track];
    const RowEvents& row = rows[track][depth];
    for (size_t k = first_in_row(e, row, vis.begin);
         k < row.events.size() && e.start[row.events[k]] < vis.end; ++k) {
      const uint32_t i = row.events[k];
      if (e.end[i] > vis.begin || (e.end[i] == e.start[i] && e.start[i] >= vis.begin))
        emit(e.start[i], e.end[i], e.name[i], e.kind[i], 1, int64_t(i));
    }
  } else if (level) {
    const auto& items = level->items;
    // Items are disjoint and sorted, so their ends are sorted too.
    auto it = std::upper_bound(items.begin(), items.end(), vis.begin,
                               [](int64_t t, const LevelItem& x) { return t < x.end; });
    for (; it != items.end() && it->start < vis.end; ++it)
      emit(it->start, it->end, it->name, it->kind, it->count, -1);
  }
  return out;
}

int64_t TimelineData::event_at(size_t track, int64_t ns, int64_t slack_ns) const {
  if (!has_events || track >= events.size()) return -1;
  const TrackEvents& e = events[track];
  int64_t best = -1;
  for (size_t i = first_overlapping(e.start, ns - slack_ns, e.max_duration);
       i < e.size() && e.start[i] <= ns + slack_ns; ++i)
    if (e.end[i] >= ns - slack_ns) best = int64_t(i);
  return best;
}

int64_t TimelineData::event_at(size_t track, size_t depth, int64_t ns, int64_t slack_ns) const {
  if (!has_events || track >= rows.size() || depth >= rows[track].size()) return -1;
  const TrackEvents& e = events[track];
  const RowEvents& row = rows[track][depth];
  int64_t best = -1;
  int64_t best_distance = INT64_MAX;
  for (size_t k = first_in_row(e, row, ns - slack_ns);
       k < row.events.size() && e.start[row.events[k]] <= ns + slack_ns; ++k) {
    const uint32_t i = row.events[k];
    if (e.end[i] < ns - slack_ns) continue;
    // Prefer the event that contains the time, then the nearest one within the slack.
    const int64_t distance = ns < e.start[i] ? e.start[i] - ns : ns > e.end[i] ? ns - e.end[i] : 0;
    if (distance <= best_distance) best = int64_t(i), best_distance = distance;
  }
  return best;
}

namespace {

void check_cancel(const TimelineLoadOptions& o, int64_t rows) {
  if ((rows & 0x3fff) == 0) {
    if (o.cancel && o.cancel->load()) throw LoadCancelled();
    if (o.progress && rows) o.progress("timeline", rows);
  }
}

}  // namespace

TimelineData load_timeline(const store::Reader& reader, int64_t capture_id,
                           const TimelineLoadOptions& options) {
  TimelineData data;
  data.capture_id = capture_id;
  const auto& strings = reader.strings();
  std::map<TrackKey, size_t> track_of;
  std::vector<TrackKey> keys;
  std::vector<TrackEvents> events;
  std::unordered_map<int64_t, int32_t> name_of_id;
  auto name_index = [&](int64_t id) {
    auto it = name_of_id.find(id);
    if (it != name_of_id.end()) return it->second;
    auto s = strings.find(id);
    const int32_t idx = data.intern(s == strings.end() ? "?" : s->second);
    name_of_id.emplace(id, idx);
    return idx;
  };
  auto track = [&](const TrackKey& key) -> TrackEvents& {
    auto [it, added] = track_of.emplace(key, keys.size());
    if (added) keys.push_back(key), events.emplace_back();
    return events[it->second];
  };
  int64_t rows = 0;
  auto add = [&](TrackEvents& e, int64_t s, int64_t en, int32_t name, EventKind kind) {
    e.start.push_back(s);
    e.end.push_back(std::max(s, en));
    e.name.push_back(name);
    e.kind.push_back(kind);
    check_cancel(options, ++rows);
  };
  const auto& db = reader.database();
  // A first part: the events that start before options.until (on a file with the (captureId,
  // start) index, a one-shot file, read from it; else the capture's row ranges, filtered).
  auto before = [&](const char* column) {
    return options.until == INT64_MAX
               ? std::string()
               : std::string(" AND ") + column + " < " + std::to_string(options.until);
  };
  // The capture's rows of `table` (store/capture_rows.h), its id bound as ?1.
  const store::CaptureRowsUse use =
      options.until == INT64_MAX ? store::CaptureRowsUse::rows : store::CaptureRowsUse::by_time;
  auto rows_of = [&](const char* table, const std::string& alias = {}) {
    return store::capture_rows_sql(db, table, capture_id, 1, use, alias);
  };
  auto gpu_table = [&](const char* table, const char* name_expr, EventKind kind) {
    auto st =
        db.prepare(std::string("SELECT ifnull(globalPid,-1), deviceId, streamId, start, end, ") +
                   name_expr + rows_of(table) + before("start"));
    st.bind(1, capture_id);
    check_cancel(options, 0);
    int32_t fixed = kind == EventKind::memset ? data.intern("Memset") : -1;
    std::unordered_map<int64_t, int32_t> copy_names;
    while (st.step()) {
      TrackKey key{TrackKind::gpu_stream, st.column_int(0), int32_t(st.column_int(1)),
                   int32_t(st.column_int(2)), -1};
      int32_t name = fixed;
      if (kind == EventKind::kernel) name = name_index(st.column_int(5));
      if (kind == EventKind::memcpy) {
        const int64_t ck = st.column_int(5);
        auto it = copy_names.find(ck);
        if (it == copy_names.end())
          it = copy_names
                   .emplace(ck, data.intern(std::string("Memcpy ") +
                                            store::memcpy_kind_short(int32_t(ck))))
                   .first;
        name = it->second;
      }
      add(track(key), st.column_int(3), st.column_int(4), name, kind);
    }
  };
  gpu_table("CUPTI_ACTIVITY_KIND_KERNEL", "shortName", EventKind::kernel);
  gpu_table("CUPTI_ACTIVITY_KIND_MEMCPY", "copyKind", EventKind::memcpy);
  gpu_table("CUPTI_ACTIVITY_KIND_MEMSET", "0", EventKind::memset);
  auto thread_table = [&](const std::string& sql, TrackKind tk, EventKind kind, bool text) {
    check_cancel(options, 0);
    auto st = db.prepare(sql);
    st.bind(1, capture_id);
    while (st.step()) {
      const int64_t tid = st.column_int(0);
      TrackKey key{tk, store::global_pid(store::pid_of(tid)), -1, -1, tid};
      int32_t name =
          text ? data.intern(st.column_is_null(3) ? std::string("(mark)") : st.column_text(3))
               : name_index(st.column_int(3));
      add(track(key), st.column_int(1), st.column_int(2), name, kind);
    }
  };
  thread_table("SELECT globalTid, start, end, nameId" + rows_of("CUPTI_ACTIVITY_KIND_RUNTIME") +
                   before("start"),
               TrackKind::thread_runtime, EventKind::runtime, false);
  thread_table(
      "SELECT ifnull(n.globalTid,0), n.start, ifnull(n.end,n.start), ifnull(n.text, (SELECT value "
      "FROM StringIds WHERE id = n.textId))" +
          rows_of("NVTX_EVENTS", "n") + before("n.start"),
      TrackKind::thread_nvtx, EventKind::nvtx, true);
  thread_table("SELECT globalTid, start, end, nameId" + rows_of("cpu_ops") + before("start"),
               TrackKind::thread_cpu, EventKind::cpu_op, false);
  {
    auto st = db.prepare("SELECT ifnull(globalPid,-1), step, start, end" + rows_of("iterations") +
                         before("start"));
    st.bind(1, capture_id);
    while (st.step()) {
      TrackKey key{TrackKind::iterations, st.column_int(0), -1, -1, -1};
      add(track(key), st.column_int(2), st.column_int(3),
          data.intern("step " + std::to_string(st.column_int(1))), EventKind::iteration);
    }
  }
  // Hosts of processes.
  std::map<int64_t, std::pair<int64_t, std::string>> host_of_pid;  // globalPid → host
  {
    std::map<int64_t, std::string> host_names;
    for (const auto& h : reader.hosts()) host_names[h.id] = h.hostname;
    for (const auto& p : reader.processes(capture_id))
      if (p.host_id) host_of_pid[p.globalPid] = {*p.host_id, host_names[*p.host_id]};
  }
  // Display order: by host, then TrackKey order.
  std::vector<size_t> order(keys.size());
  std::iota(order.begin(), order.end(), size_t(0));
  auto host_id = [&](const TrackKey& k) {
    auto it = host_of_pid.find(store::global_pid(store::pid_of(k.global_pid)));
    return it == host_of_pid.end() ? INT64_MAX : it->second.first;
  };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int64_t ha = host_id(keys[a]), hb = host_id(keys[b]);
    return ha != hb ? ha < hb : keys[a] < keys[b];
  });
  for (size_t i : order) {
    Track t;
    t.key = keys[i];
    auto h = host_of_pid.find(store::global_pid(store::pid_of(t.key.global_pid)));
    if (h != host_of_pid.end()) t.host_id = h->second.first, t.host = h->second.second;
    switch (t.key.kind) {
      case TrackKind::gpu_stream:
        t.label =
            "GPU " + std::to_string(t.key.device) + " · stream " + std::to_string(t.key.stream);
        if (t.key.global_pid >= 0)
          t.label = "pid " + std::to_string(store::pid_of(t.key.global_pid)) + " · " + t.label;
        break;
      case TrackKind::iterations:
        t.label = "iterations";
        break;
      default:
        t.label = "tid " + std::to_string(store::tid_of(t.key.global_tid)) + " · " +
                  to_string(t.key.kind);
    }
    data.tracks.push_back(std::move(t));
    data.events.push_back(std::move(events[i]));
  }
  if (options.progress) options.progress("zoom levels", rows);
  data.finalize();
  return data;
}

namespace {

// The event tables the timeline reads, with the expression of an event's end as load_timeline
// takes it (never before its start).
struct TimedTable {
  const char* table;
  const char* end;
};
constexpr TimedTable kTimedTables[] = {
    {"CUPTI_ACTIVITY_KIND_KERNEL", "max(start, end)"},
    {"CUPTI_ACTIVITY_KIND_MEMCPY", "max(start, end)"},
    {"CUPTI_ACTIVITY_KIND_MEMSET", "max(start, end)"},
    {"CUPTI_ACTIVITY_KIND_RUNTIME", "max(start, end)"},
    {"NVTX_EVENTS", "max(start, ifnull(end, start))"},
    {"cpu_ops", "max(start, end)"},
    {"iterations", "max(start, end)"},
};

std::optional<int64_t> single_int(const store::Database& db, const std::string& sql,
                                  std::initializer_list<int64_t> args) {
  auto st = db.prepare(sql);
  int i = 1;
  for (int64_t a : args) st.bind(i++, a);
  if (!st.step() || st.column_is_null(0)) return std::nullopt;
  return st.column_int(0);
}

}  // namespace

TimeRange capture_span(const store::Reader& reader, int64_t capture_id) {
  const auto& db = reader.database();
  TimeRange span{INT64_MAX, INT64_MIN};
  for (const TimedTable& t : kTimedTables) {
    const std::string table = t.table;
    // On a one-shot file min() and max() of the indexed start are one index lookup each (not
    // both in one query); on the host database one pass over the capture's row ranges.
    const std::string rows =
        store::capture_rows_sql(db, table, capture_id, 1, store::CaptureRowsUse::by_time);
    const auto first = single_int(db, "SELECT min(start)" + rows, {capture_id});
    if (!first) continue;
    const auto last_start = single_int(db, "SELECT max(start)" + rows, {capture_id});
    // Only events starting within the longest duration of the last start can end last.
    auto st = db.prepare("SELECT max_duration FROM event_extent WHERE tbl = ? AND captureId = ?");
    st.bind(1, table).bind(2, capture_id);
    const int64_t from = st.step() ? *last_start - st.column_int(0) : INT64_MIN;
    const auto last_end =
        single_int(db, std::string("SELECT max(") + t.end + ")" + rows + " AND start >= ?2",
                   {capture_id, from});
    span.begin = std::min(span.begin, *first);
    span.end = std::max(span.end, last_end.value_or(*last_start));
  }
  if (span.begin >= span.end) return {0, 1};
  return span;
}

std::optional<TimelineData> load_timeline_head(const store::Reader& reader, int64_t capture_id,
                                               int64_t events, const TimelineLoadOptions& options) {
  const auto& db = reader.database();
  // The earliest time by which one table has `events` events: the other tables' events before it
  // are fewer, so the part holds at most `events` per table.
  std::optional<int64_t> cut;
  for (const TimedTable& t : kTimedTables) {
    const auto at = single_int(
        db,
        "SELECT start" +
            store::capture_rows_sql(db, t.table, capture_id, 1, store::CaptureRowsUse::by_time) +
            " ORDER BY start LIMIT 1 OFFSET ?2",
        {capture_id, events});
    if (at && (!cut || *at < *cut)) cut = at;
  }
  if (!cut) return std::nullopt;
  const TimeRange span = capture_span(reader, capture_id);
  if (*cut <= span.begin) return std::nullopt;  // nothing before the cut: no part to show
  TimelineLoadOptions part = options;
  part.until = *cut;
  TimelineData data = load_timeline(reader, capture_id, part);
  data.span = {std::min(span.begin, data.span.begin), std::max(span.end, data.span.end)};
  data.loaded_until = *cut;
  return data;
}

}  // namespace fleetscope::timeline
