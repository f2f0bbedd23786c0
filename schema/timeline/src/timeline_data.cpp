#include "fleetscope/timeline/timeline_data.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

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

namespace {

void sort_track(TrackEvents& e) {
  if (std::is_sorted(e.start.begin(), e.start.end())) return;
  std::vector<uint32_t> order(e.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return e.start[a] < e.start[b]; });
  TrackEvents sorted;
  sorted.start.reserve(e.size());
  for (uint32_t i : order) {
    sorted.start.push_back(e.start[i]);
    sorted.end.push_back(e.end[i]);
    sorted.name.push_back(e.name[i]);
    sorted.kind.push_back(e.kind[i]);
  }
  sorted.max_duration = e.max_duration;
  e = std::move(sorted);
}

// Merges items whose gap is below `gap` (input sorted by start).
template <class Get>
ZoomLevel merge_level(size_t n, int64_t gap, Get get) {
  ZoomLevel level;
  level.gap_ns = gap;
  LevelItem open;
  int64_t open_longest = -1;
  for (size_t i = 0; i < n; ++i) {
    const LevelItem item = get(i);
    const int64_t len = item.end - item.start;
    if (open_longest >= 0 && item.start - open.end < gap) {
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

}  // namespace

void TimelineData::finalize() {
  levels.assign(events.size(), {});
  span = {INT64_MAX, INT64_MIN};
  for (size_t t = 0; t < events.size(); ++t) {
    TrackEvents& e = events[t];
    sort_track(e);
    e.max_duration = 0;
    for (size_t i = 0; i < e.size(); ++i) {
      e.max_duration = std::max(e.max_duration, e.end[i] - e.start[i]);
      span.begin = std::min(span.begin, e.start[i]);
      span.end = std::max(span.end, e.end[i]);
    }
    // Level 0 from the raw events, each next level from the previous one (merging merged items
    // with a larger gap gives the same result as merging the raw events with it).
    int64_t gap = base_gap_ns;
    ZoomLevel level = merge_level(e.size(), gap, [&](size_t i) {
      return LevelItem{e.start[i], e.end[i], e.name[i], e.kind[i], 1};
    });
    for (int k = 0; k < level_count; ++k) {
      ZoomLevel next;
      if (k + 1 < level_count) {
        const auto& items = level.items;
        next = merge_level(items.size(), gap * 4, [&](size_t i) { return items[i]; });
      }
      // A level that hardly summarises its input is not kept: raw events (or the finer level)
      // are drawn as cheaply.
      const size_t below = levels[t].empty() ? e.size() : levels[t].back().items.size();
      if (level.items.size() * 4 <= below * 3 || k + 1 == level_count) levels[t].push_back(level);
      if (level.items.size() <= 1) break;
      level = std::move(next);
      gap *= 4;
    }
  }
  if (span.begin >= span.end) span = {0, 1};
  has_events = true;
}

std::vector<DrawSpan> TimelineData::spans(size_t track, const TimeView& view) const {
  std::vector<DrawSpan> out;
  const TimeRange vis = view.visible();
  const double npp = view.ns_per_pixel();
  auto emit = [&](int64_t s, int64_t e, int32_t name, EventKind kind, uint32_t count, int64_t idx) {
    double x0 = std::max(-1.0, view.to_pixel(s));
    double x1 = std::min(view.width() + 1, view.to_pixel(e));
    // Per-pixel merging: a run that starts inside the last drawn pixel column joins it.
    if (!out.empty() && x0 < std::floor(out.back().x1) + 1.0) {
      DrawSpan& last = out.back();
      if (x1 > last.x1) last.x1 = x1;
      if (e - s > last.end - last.start) last.name = name, last.kind = kind;
      last.end = std::max(last.end, e);
      last.count += count;
      last.event = -1;
      return;
    }
    if (x1 - x0 < 1.0) x1 = x0 + 1.0;
    out.push_back({x0, x1, name, kind, count, s, e, idx});
  };
  // The coarsest level whose gap a pixel hides, if the raw events are not loaded the finest.
  const ZoomLevel* level = nullptr;
  if (track < levels.size())
    for (const ZoomLevel& l : levels[track])
      if (double(l.gap_ns) <= npp || (!has_events && !level)) level = &l;
  const bool raw = has_events && track < events.size() && (!level || double(level->gap_ns) > npp);
  if (raw) {
    const TrackEvents& e = events[track];
    for (size_t i = first_overlapping(e.start, vis.begin, e.max_duration);
         i < e.size() && e.start[i] < vis.end; ++i)
      if (e.end[i] > vis.begin) emit(e.start[i], e.end[i], e.name[i], e.kind[i], 1, int64_t(i));
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
  const std::string cap = std::to_string(capture_id);
  auto gpu_table = [&](const char* table, const char* name_expr, EventKind kind) {
    auto st =
        db.prepare(std::string("SELECT ifnull(globalPid,-1), deviceId, streamId, start, end, ") +
                   name_expr + " FROM " + table + " WHERE captureId = " + cap);
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
    while (st.step()) {
      const int64_t tid = st.column_int(0);
      TrackKey key{tk, store::global_pid(store::pid_of(tid)), -1, -1, tid};
      int32_t name =
          text ? data.intern(st.column_is_null(3) ? std::string("(mark)") : st.column_text(3))
               : name_index(st.column_int(3));
      add(track(key), st.column_int(1), st.column_int(2), name, kind);
    }
  };
  thread_table(
      "SELECT globalTid, start, end, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE captureId = " +
          cap,
      TrackKind::thread_runtime, EventKind::runtime, false);
  thread_table(
      "SELECT ifnull(n.globalTid,0), n.start, ifnull(n.end,n.start), ifnull(n.text, s.value) "
      "FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId WHERE n.captureId = " +
          cap,
      TrackKind::thread_nvtx, EventKind::nvtx, true);
  thread_table("SELECT globalTid, start, end, nameId FROM cpu_ops WHERE captureId = " + cap,
               TrackKind::thread_cpu, EventKind::cpu_op, false);
  {
    auto st = db.prepare(
        "SELECT ifnull(globalPid,-1), step, start, end FROM iterations WHERE captureId = " + cap);
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

}  // namespace fleetscope::timeline
