// Builds a TimelineData by hand for the timeline model's tests: tracks of a given kind and their
// events, finalized as the loader does.
#pragma once

#include <string>

#include "fleetscope/timeline/timeline_data.h"

namespace fleetscope::timeline::test {

class Builder {
 public:
  size_t track(TrackKind kind, const std::string& label) {
    Track t;
    t.key.kind = kind;
    t.key.global_tid = int64_t(data.tracks.size());
    t.key.stream = int32_t(data.tracks.size());
    t.label = label;
    data.tracks.push_back(t);
    data.events.emplace_back();
    return data.tracks.size() - 1;
  }
  void event(size_t track, int64_t start, int64_t end, const std::string& name,
             EventKind kind = EventKind::cpu_op) {
    TrackEvents& e = data.events[track];
    e.start.push_back(start);
    e.end.push_back(end);
    e.name.push_back(data.intern(name));
    e.kind.push_back(kind);
  }
  TimelineData& finish() {
    data.finalize();
    return data;
  }
  TimelineData data;
};

inline std::string name_at(const TimelineData& d, size_t track, int64_t event) {
  return d.name(d.events[track].name[size_t(event)]);
}

}  // namespace fleetscope::timeline::test
