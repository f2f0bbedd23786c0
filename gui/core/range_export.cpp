#include "range_export.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "fleetscope/common/new_file.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::gui {

int64_t export_range_chrome(const TimelineData& data, TimeRange range, const std::string& path) {
  nlohmann::json events = nlohmann::json::array();
  int64_t written = 0;
  auto us = [&](int64_t ns) { return double(ns - range.begin) / 1e3; };
  for (size_t t = 0; t < data.tracks.size(); ++t) {
    const Track& track = data.tracks[t];
    const int64_t pid = track.key.global_pid < 0 ? 0 : store::pid_of(track.key.global_pid);
    // Thread ids: host threads keep theirs; GPU streams and iterations get their own rows.
    const int64_t tid = track.key.kind == TrackKind::gpu_stream
                            ? 1000000 + int64_t(track.key.device) * 1000 + track.key.stream
                        : track.key.kind == TrackKind::iterations
                            ? 999999
                            : store::tid_of(track.key.global_tid);
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", pid},
                      {"tid", tid},
                      {"args", {{"name", track.label}}}});
    const TrackEvents& e = data.events[t];
    for (size_t i = TimelineData::first_overlapping(e.start, range.begin, e.max_duration);
         i < e.size() && e.start[i] < range.end; ++i) {
      if (e.end[i] <= range.begin && e.end[i] != e.start[i]) continue;
      events.push_back({{"ph", "X"},
                        {"name", data.name(e.name[i])},
                        {"cat", to_string(e.kind[i])},
                        {"pid", pid},
                        {"tid", tid},
                        {"ts", us(e.start[i])},
                        {"dur", double(e.end[i] - e.start[i]) / 1e3}});
      ++written;
    }
  }
  nlohmann::json doc = {{"traceEvents", std::move(events)},
                        {"displayTimeUnit", "ns"},
                        {"baseTimeNanoseconds", range.begin}};
  // The one way outputs are written (store/database.h): a temporary name of its own beside the
  // output, created new (never through a planted link), renamed into place at the end.
  store::AtomicOutput output(path);
  const int fd = common::create_new_file(output.temp_path());
  if (fd < 0) throw Error(path + ": cannot write: " + std::strerror(errno));
  const bool written_all = common::write_all(fd, doc.dump());
  const int error = errno;
  ::close(fd);
  if (!written_all) throw Error(path + ": write failed: " + std::strerror(error));
  output.commit();
  return written;
}

}  // namespace fleetscope::gui
