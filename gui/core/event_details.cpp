#include "event_details.h"

#include "fleetscope/store/capture_rows.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::gui {

namespace {

const char* table_of(EventKind kind) {
  switch (kind) {
    case EventKind::kernel:
      return "CUPTI_ACTIVITY_KIND_KERNEL";
    case EventKind::memcpy:
      return "CUPTI_ACTIVITY_KIND_MEMCPY";
    case EventKind::memset:
      return "CUPTI_ACTIVITY_KIND_MEMSET";
    case EventKind::runtime:
      return "CUPTI_ACTIVITY_KIND_RUNTIME";
    case EventKind::nvtx:
      return "NVTX_EVENTS";
    case EventKind::cpu_op:
      return "cpu_ops";
    case EventKind::iteration:
      return "iterations";
  }
  return "";
}

bool is_name_column(const std::string& c) {
  return c == "demangledName" || c == "shortName" || c == "mangledName" || c == "nameId" ||
         c == "textId";
}

// "FROM ... WHERE ..." that finds the event's row: its capture's rows of the table (?1, bound by
// the caller; store::capture_rows_sql: the row ranges on a host database, which has no
// per-capture index, the (captureId, start) index on a file that has it), then track and times.
std::string locate(const store::Database& db, const TimelineData& data, size_t track,
                   int64_t event) {
  const Track& t = data.tracks.at(track);
  const TrackEvents& e = data.events.at(track);
  const size_t i = size_t(event);
  std::string w = store::capture_rows_sql(db, table_of(e.kind[i]), data.capture_id, 1,
                                          store::CaptureRowsUse::by_time) +
                  " AND start = " + std::to_string(e.start[i]);
  if (t.key.kind == TrackKind::gpu_stream)
    w += " AND deviceId = " + std::to_string(t.key.device) +
         " AND streamId = " + std::to_string(t.key.stream);
  else if (t.key.kind == TrackKind::iterations)
    w += t.key.global_pid < 0 ? " AND globalPid IS NULL"
                              : " AND globalPid = " + std::to_string(t.key.global_pid);
  else if (t.key.kind != TrackKind::thread_nvtx || t.key.global_tid != 0)
    w += " AND globalTid = " + std::to_string(t.key.global_tid);
  return w + " LIMIT 1";
}

// The capture's row of `table` with correlation id ?2 (the capture is ?1). by_time: a file with
// the (captureId, start) index is a one-shot file, which also has the correlation indexes that
// the plain filter lets SQLite use; a host database reads the capture's rows by its ranges.
std::string by_correlation(const store::Database& db, const char* table, const TimelineData& data) {
  return store::capture_rows_sql(db, table, data.capture_id, 1, store::CaptureRowsUse::by_time) +
         " AND correlationId = ?2 LIMIT 1";
}

std::optional<size_t> track_of(const TimelineData& data, const TrackKey& key) {
  for (size_t t = 0; t < data.tracks.size(); ++t)
    if (data.tracks[t].key == key) return t;
  return std::nullopt;
}

}  // namespace

EventDetails event_details(const store::Reader& reader, const TimelineData& data, size_t track,
                           int64_t event) {
  EventDetails out;
  if (track >= data.events.size() || event < 0 || size_t(event) >= data.events[track].size())
    return out;
  const TrackEvents& e = data.events[track];
  const size_t i = size_t(event);
  out.fields.push_back({"name", data.name(e.name[i])});
  out.fields.push_back({"kind", to_string(e.kind[i])});
  out.fields.push_back({"track", data.tracks[track].label});
  out.fields.push_back({"duration (ns)", std::to_string(e.end[i] - e.start[i])});
  const store::Database& db = reader.database();
  auto st = db.prepare(std::string("SELECT ") + table_of(e.kind[i]) + ".*" +
                       locate(db, data, track, event));
  st.bind(1, data.capture_id);
  if (!st.step()) return out;
  for (int c = 0; c < st.column_count(); ++c) {
    const std::string column = st.column_name(c);
    if (st.column_is_null(c)) continue;
    std::string value = st.column_text(c);
    if (is_name_column(column)) value = reader.string(st.column_int(c));
    if (column == "correlationId") out.correlation = st.column_int(c);
    if (column == "globalPid" || column == "globalTid")
      value += " (pid " + std::to_string(store::pid_of(st.column_int(c))) +
               (column == "globalTid" ? ", tid " + std::to_string(store::tid_of(st.column_int(c)))
                                      : "") +
               ")";
    out.fields.push_back({column, value});
  }
  return out;
}

std::optional<Flow> event_flow(const store::Reader& reader, const TimelineData& data, size_t track,
                               int64_t event) {
  if (track >= data.events.size() || event < 0) return std::nullopt;
  const EventKind kind = data.events[track].kind[size_t(event)];
  const bool gpu =
      kind == EventKind::kernel || kind == EventKind::memcpy || kind == EventKind::memset;
  if (!gpu && kind != EventKind::runtime) return std::nullopt;
  const store::Database& db = reader.database();
  auto st = db.prepare(std::string("SELECT correlationId") + locate(db, data, track, event));
  st.bind(1, data.capture_id);
  if (!st.step() || st.column_is_null(0)) return std::nullopt;
  const int64_t corr = st.column_int(0);
  Flow flow;
  if (gpu) {
    flow.gpu_track = track;
    flow.gpu_event = event;
    auto r = db.prepare("SELECT globalTid, start" +
                        by_correlation(db, "CUPTI_ACTIVITY_KIND_RUNTIME", data));
    r.bind(1, data.capture_id).bind(2, corr);
    if (!r.step()) return std::nullopt;
    const int64_t tid = r.column_int(0);
    auto t = track_of(
        data, {TrackKind::thread_runtime, store::global_pid(store::pid_of(tid)), -1, -1, tid});
    if (!t) return std::nullopt;
    flow.launch_track = *t;
    flow.launch_event = data.event_at(*t, r.column_int(1));
  } else {
    flow.launch_track = track;
    flow.launch_event = event;
    for (const char* table : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                              "CUPTI_ACTIVITY_KIND_MEMSET"}) {
      auto g = db.prepare(std::string("SELECT ifnull(globalPid,-1), deviceId, streamId, start") +
                          by_correlation(db, table, data));
      g.bind(1, data.capture_id).bind(2, corr);
      if (!g.step()) continue;
      auto t = track_of(data, {TrackKind::gpu_stream, g.column_int(0), int32_t(g.column_int(1)),
                               int32_t(g.column_int(2)), -1});
      if (!t) return std::nullopt;
      flow.gpu_track = *t;
      flow.gpu_event = data.event_at(*t, g.column_int(3));
      break;
    }
    if (flow.gpu_event < 0) return std::nullopt;
  }
  if (flow.launch_event < 0 || flow.gpu_event < 0) return std::nullopt;
  return flow;
}

}  // namespace fleetscope::gui
