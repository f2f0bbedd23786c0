#include "critical_path_events.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <utility>

#include "fleetscope/timeline/ruler.h"

namespace fleetscope::gui {

namespace {

const char* gpu_kind(analyzer::GpuEventKind kind) {
  switch (kind) {
    case analyzer::GpuEventKind::kernel:
      return "kernel";
    case analyzer::GpuEventKind::memcpy:
      return "memcpy";
    case analyzer::GpuEventKind::memset:
      return "memset";
  }
  return "kernel";
}

}  // namespace

std::vector<PathEvent> critical_path_members(const analyzer::CriticalPath& path,
                                             const analyzer::CaptureData& data) {
  std::vector<PathEvent> out;
  std::set<std::pair<analyzer::CriticalEventKind, int64_t>> seen;
  for (const auto& s : path.path) {
    if (s.kind == analyzer::CriticalEventKind::none || s.index < 0) continue;
    if (!seen.insert({s.kind, s.index}).second) continue;
    const auto i = size_t(s.index);
    PathEvent e;
    e.name = s.name;
    switch (s.kind) {
      case analyzer::CriticalEventKind::cpu_op:
        if (i >= data.cpu_ops.size()) continue;
        e.kind = "cpu_op";
        e.start = data.cpu_ops[i].start, e.end = data.cpu_ops[i].end;
        e.global_tid = data.cpu_ops[i].global_tid;
        break;
      case analyzer::CriticalEventKind::runtime:
        if (i >= data.runtime.size()) continue;
        e.kind = "runtime";
        e.start = data.runtime.start[i], e.end = data.runtime.end[i];
        e.global_tid = data.runtime.global_tid[i];
        break;
      case analyzer::CriticalEventKind::gpu:
        if (i >= data.gpu.size()) continue;
        e.kind = gpu_kind(data.gpu.kind[i]);
        e.start = data.gpu.start[i], e.end = data.gpu.end[i];
        e.device = data.gpu.device[i], e.stream = data.gpu.stream[i];
        break;
      case analyzer::CriticalEventKind::none:
        continue;
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<EvidenceEvent> critical_path_events(const std::vector<PathEvent>& members,
                                                const TimelineData* timeline) {
  std::vector<EvidenceEvent> out;
  for (const PathEvent& m : members) {
    EvidenceEvent e;
    e.kind = m.kind, e.name = m.name, e.start = m.start, e.end = m.end;
    e.device = m.device, e.stream = m.stream, e.global_tid = m.global_tid;
    if (timeline)
      if (auto found = find_event(*timeline, e)) e.track = found->first, e.event = found->second;
    out.push_back(std::move(e));
  }
  return out;
}

std::string critical_path_summary(const analyzer::CriticalPath& path, int64_t capture_start) {
  if (!path.computed) return "Critical path not computed: " + path.not_computed_reason + ".";
  std::string text = "Critical path of ";
  text += path.step ? "step " + std::to_string(*path.step) : std::string("the whole capture");
  text += " (" + timeline::format_duration_ns(path.window.begin - capture_start) + " – " +
          timeline::format_duration_ns(path.window.end - capture_start) +
          " from the capture start): " + timeline::format_duration_ns(path.length_ns) + " along " +
          std::to_string(path.path.size()) + " edges; bound by ";
  // HTA's bound_by split, largest first.
  std::vector<std::pair<std::string, int64_t>> bound(path.by_bound.begin(), path.by_bound.end());
  std::sort(bound.begin(), bound.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  bool first = true;
  for (const auto& [name, ns] : bound) {
    if (ns <= 0) continue;
    char share[32];
    std::snprintf(share, sizeof share, " %.1f %%",
                  path.length_ns > 0 ? 100.0 * double(ns) / double(path.length_ns) : 0.0);
    text += (first ? "" : ", ") + name + share;
    first = false;
  }
  if (first) text += "nothing";
  if (!path.what_if.empty()) {
    const auto& w = path.what_if.front();
    char line[64];
    std::snprintf(line, sizeof line, " %.0f %% faster: the path %.1f %% shorter", 100 * w.faster,
                  w.path_shorter_pct);
    text += ". If " + w.name + " were" + line;
  }
  return text + ".";
}

}  // namespace fleetscope::gui
