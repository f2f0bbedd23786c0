#include "fleetscope/timeline/timeline_cache.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <type_traits>

#include "fleetscope/store/reader.h"

namespace fleetscope::timeline {
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'F', 'S', 'Z', 'O', 'O', 'M', '0', '3'};

struct Stamp {
  int64_t size = 0, mtime = 0;
};

std::optional<Stamp> stamp_of(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return std::nullopt;
  const auto time = fs::last_write_time(path, ec);
  if (ec) return std::nullopt;
  return Stamp{int64_t(size), int64_t(time.time_since_epoch().count())};
}

class Out {
 public:
  explicit Out(std::ofstream& f) : f_(f) {}
  template <class T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    f_.write(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(const std::string& s) {
    pod(uint32_t(s.size()));
    f_.write(s.data(), std::streamsize(s.size()));
  }
  template <class T>
  void vec(const std::vector<T>& v) {
    pod(uint64_t(v.size()));
    f_.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(T)));
  }

 private:
  std::ofstream& f_;
};

class In {
 public:
  explicit In(std::ifstream& f) : f_(f) {}
  template <class T>
  T pod() {
    T v{};
    f_.read(reinterpret_cast<char*>(&v), sizeof v);
    if (!f_) throw std::runtime_error("truncated");
    return v;
  }
  std::string str() {
    const auto n = pod<uint32_t>();
    if (n > (1u << 24)) throw std::runtime_error("bad string");
    std::string s(n, '\0');
    f_.read(s.data(), n);
    if (!f_) throw std::runtime_error("truncated");
    return s;
  }
  template <class T>
  std::vector<T> vec() {
    const auto n = pod<uint64_t>();
    if (n > (uint64_t(1) << 32)) throw std::runtime_error("bad vector");
    std::vector<T> v(n);
    f_.read(reinterpret_cast<char*>(v.data()), std::streamsize(n * sizeof(T)));
    if (!f_) throw std::runtime_error("truncated");
    return v;
  }

 private:
  std::ifstream& f_;
};

}  // namespace

std::string timeline_cache_path(const std::string& db_path, int64_t capture_id) {
  return db_path + ".capture" + std::to_string(capture_id) + ".zoom";
}

bool save_timeline_cache(const std::string& db_path, const TimelineData& data,
                         uint64_t item_budget) {
  const auto stamp = stamp_of(db_path);
  if (!stamp) return false;
  // The first paint needs the coarse levels only (finer ones are rebuilt with the raw events):
  // keep levels from the coarsest gap down while all tracks together stay within the budget, so
  // the cache stays small and quick to read however large the capture.
  std::map<int64_t, uint64_t> items_at_gap;
  for (const auto& track : data.levels)
    for (const auto& row : track)
      for (const auto& l : row) items_at_gap[l.gap_ns] += l.items.size();
  int64_t finest_gap = INT64_MAX;
  uint64_t total = 0;
  for (auto it = items_at_gap.rbegin(); it != items_at_gap.rend(); ++it) {
    if (total + it->second > item_budget && finest_gap != INT64_MAX) break;
    total += it->second;
    finest_gap = it->first;
  }
  const std::string path = timeline_cache_path(db_path, data.capture_id);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return false;
    Out o(f);
    f.write(kMagic, sizeof kMagic);
    o.pod(stamp->size);
    o.pod(stamp->mtime);
    o.pod(data.capture_id);
    o.pod(data.span);
    o.pod(uint64_t(data.names.size()));
    for (const auto& n : data.names) o.str(n);
    o.pod(uint64_t(data.tracks.size()));
    for (size_t t = 0; t < data.tracks.size(); ++t) {
      const Track& track = data.tracks[t];
      o.pod(track.key);
      o.pod(track.host_id);
      o.str(track.host);
      o.str(track.label);
      o.pod(uint64_t(data.levels[t].size()));
      for (const RowLevels& row : data.levels[t]) {
        // The coarsest level of a row is kept even below the budget's gap, so every row draws.
        std::vector<const ZoomLevel*> levels;
        for (const auto& l : row)
          if (l.gap_ns >= finest_gap || &l == &row.back()) levels.push_back(&l);
        o.pod(uint64_t(levels.size()));
        for (const ZoomLevel* level : levels) {
          const ZoomLevel& l = *level;
          o.pod(l.gap_ns);
          o.pod(l.max_duration);
          o.vec(l.items);
        }
      }
    }
    if (!f.good()) {
      f.close();
      std::remove(tmp.c_str());
      return false;
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) std::remove(tmp.c_str());
  return !ec;
}

std::optional<TimelineData> load_timeline_cache(const std::string& db_path, int64_t capture_id) {
  const auto stamp = stamp_of(db_path);
  if (!stamp) return std::nullopt;
  std::ifstream f(timeline_cache_path(db_path, capture_id), std::ios::binary);
  if (!f) return std::nullopt;
  try {
    char magic[sizeof kMagic];
    f.read(magic, sizeof magic);
    if (!f || std::memcmp(magic, kMagic, sizeof kMagic) != 0) return std::nullopt;
    In in(f);
    if (in.pod<int64_t>() != stamp->size || in.pod<int64_t>() != stamp->mtime) return std::nullopt;
    if (in.pod<int64_t>() != capture_id) return std::nullopt;
    TimelineData data;
    data.capture_id = capture_id;
    data.span = in.pod<TimeRange>();
    const auto names = in.pod<uint64_t>();
    for (uint64_t i = 0; i < names; ++i) data.intern(in.str());
    const auto tracks = in.pod<uint64_t>();
    if (tracks > (1u << 20)) return std::nullopt;
    for (uint64_t t = 0; t < tracks; ++t) {
      Track track;
      track.key = in.pod<TrackKey>();
      track.host_id = in.pod<int64_t>();
      track.host = in.str();
      track.label = in.str();
      data.tracks.push_back(std::move(track));
      const auto depths = in.pod<uint64_t>();
      if (depths > TimelineData::max_depth) return std::nullopt;
      std::vector<RowLevels> rows(depths);
      for (auto& row : rows) {
        row.resize(in.pod<uint64_t>() & 0xff);
        for (auto& l : row) {
          l.gap_ns = in.pod<int64_t>();
          l.max_duration = in.pod<int64_t>();
          l.items = in.vec<LevelItem>();
          for (const auto& item : l.items)
            if (item.name < 0 || size_t(item.name) >= data.names.size()) return std::nullopt;
        }
      }
      data.levels.push_back(std::move(rows));
    }
    data.events.resize(data.tracks.size());
    data.has_events = false;
    return data;
  } catch (const std::exception&) {
    return std::nullopt;  // a damaged cache is rebuilt
  }
}

int write_capture_summaries(const std::string& db_path, uint64_t item_budget) {
  int written = 0;
  try {
    const store::Reader reader(db_path);
    for (const auto& capture : reader.captures())
      if (save_timeline_cache(db_path, load_timeline(reader, capture.id), item_budget)) ++written;
  } catch (const std::exception&) {
    // Not readable as a trace database: no summary; the GUI reports the problem when opened.
  }
  return written;
}

}  // namespace fleetscope::timeline
