#include "finding_evidence.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "fleetscope/timeline/ruler.h"

namespace fleetscope::gui {

namespace {

using nlohmann::json;

std::string duration(int64_t ns) {
  return timeline::format_duration_ns(ns);
}

std::string at(int64_t ns, int64_t origin) {
  // To the µs, whatever the capture's length: an evidence time is looked up, not compared.
  return timeline::ruler_label(ns - origin, 1000, ns - origin);
}

bool is_window(const json& w) {
  return w.is_array() && w.size() == 2 && w[0].is_number_integer() && w[1].is_number_integer();
}

std::string readable(const std::string& key, const json& v, int64_t origin) {
  auto ends_with = [&](const char* suffix) {
    const std::string s(suffix);
    return key.size() >= s.size() && key.compare(key.size() - s.size(), s.size(), s) == 0;
  };
  if (v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), is_window)) {
    std::string out;
    for (const json& w : v) {
      if (!out.empty()) out += ", ";
      const int64_t b = w[0].get<int64_t>(), e = w[1].get<int64_t>();
      out += at(b, origin) + " – " + at(e, origin) + " (" + duration(e - b) + ")";
    }
    return out;
  }
  if (v.is_array() && !v.empty() && v[0].is_object() && v[0].contains("name")) {
    std::string out;
    for (const json& o : v) {
      if (!out.empty()) out += "; ";
      out += o.value("name", std::string("?"));
      if (o.contains("count")) out += " ×" + o["count"].dump();
      if (o.contains("total_ns") && o["total_ns"].is_number())
        out += " (" + duration(o["total_ns"].get<int64_t>()) + ")";
    }
    return out;
  }
  if (v.is_object()) {
    std::string out;
    for (const auto& [k, x] : v.items()) out += (out.empty() ? "" : ", ") + k + " = " + x.dump();
    return out;
  }
  if (v.is_number() && ends_with("_ns")) return duration(v.get<int64_t>());
  if (v.is_number_float() &&
      (key.find("share") != std::string::npos || key.find("utilization") != std::string::npos ||
       key.find("overlap") != std::string::npos)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %%", 100 * v.get<double>());
    return buf;
  }
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::optional<EventKind> event_kind(const std::string& kind) {
  if (kind == "kernel") return EventKind::kernel;
  if (kind == "memcpy") return EventKind::memcpy;
  if (kind == "memset") return EventKind::memset;
  if (kind == "runtime") return EventKind::runtime;
  if (kind == "cpu_op") return EventKind::cpu_op;
  return std::nullopt;
}

}  // namespace

std::optional<std::pair<size_t, int64_t>> find_event(const TimelineData& data,
                                                     const EvidenceEvent& ev) {
  const auto kind = event_kind(ev.kind);
  if (!kind || !data.has_events) return std::nullopt;
  const bool host = *kind == EventKind::runtime || *kind == EventKind::cpu_op;
  const TrackKind track_kind = *kind == EventKind::runtime  ? TrackKind::thread_runtime
                               : *kind == EventKind::cpu_op ? TrackKind::thread_cpu
                                                            : TrackKind::gpu_stream;
  for (size_t t = 0; t < data.tracks.size(); ++t) {
    const TrackKey& key = data.tracks[t].key;
    if (key.kind != track_kind) continue;
    if (host ? key.global_tid != ev.global_tid : key.device != ev.device || key.stream != ev.stream)
      continue;
    const TrackEvents& e = data.events[t];
    for (auto it = std::lower_bound(e.start.begin(), e.start.end(), ev.start);
         it != e.start.end() && *it == ev.start; ++it) {
      const auto i = size_t(it - e.start.begin());
      if (e.end[i] == ev.end && e.kind[i] == *kind) return std::pair{t, int64_t(i)};
    }
  }
  return std::nullopt;
}

FindingEvidence finding_evidence(const store::Finding& finding, const TimelineData* data,
                                 int64_t capture_start) {
  FindingEvidence out;
  const json doc = json::parse(finding.evidence_json, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) {
    if (!finding.evidence_json.empty() && finding.evidence_json != "{}")
      out.fields.push_back({"evidence", finding.evidence_json});
    return out;
  }
  for (const auto& [key, v] : doc.items()) {
    if (key == "offending_events" && v.is_array()) {
      for (const json& o : v) {
        if (!o.is_object()) continue;
        EvidenceEvent e;
        e.kind = o.value("kind", std::string());
        e.name = o.value("name", std::string());
        e.start = o.value("start", int64_t{0});
        e.end = o.value("end", int64_t{0});
        e.device = o.value("device", -1);
        e.stream = o.value("stream", -1);
        e.global_tid = o.value("global_tid", int64_t{-1});
        if (data)
          if (auto found = find_event(*data, e)) e.track = found->first, e.event = found->second;
        out.events.push_back(std::move(e));
      }
      continue;
    }
    if (key == "focus" && v.is_array() && !v.empty() && is_window(v[0])) {
      out.focus = TimeRange{v[0][0].get<int64_t>(), v[0][1].get<int64_t>()};
      continue;
    }
    out.fields.push_back({key, readable(key, v, capture_start)});
  }
  return out;
}

EvidenceModel::EvidenceModel(QObject* parent)
    : RowTableModel({"Kind", "Name", "Start (from capture start)", "Duration", "Track"}, parent) {}

QVariant EvidenceModel::cell(const EvidenceEvent& e, int column, int role) const {
  if (role == kSortRole) {
    switch (column) {
      case start:
        return qlonglong(e.start);
      case duration:
        return qlonglong(e.end - e.start);
      default:
        break;
    }
  }
  if (role == Qt::ToolTipRole && !e.track)
    return "not on the timeline (its events are still loading, or another capture)";
  if (role != Qt::DisplayRole && role != kSortRole) return {};
  switch (column) {
    case kind:
      return QString::fromStdString(e.kind);
    case name:
      return QString::fromStdString(e.name);
    case start:
      return QString::fromStdString(at(e.start, origin_));
    case duration:
      return QString::fromStdString(timeline::format_duration_ns(e.end - e.start));
    case track:
      return QString("GPU %1 · stream %2").arg(e.device).arg(e.stream);
  }
  return {};
}

}  // namespace fleetscope::gui
