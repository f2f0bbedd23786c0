#include "fleetscope/timeline/timeline_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <type_traits>

#include "fleetscope/store/reader.h"

namespace fleetscope::timeline {
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'F', 'S', 'Z', 'O', 'O', 'M', '0', '4'};
// A cache never legitimately comes near this (about a million level items, some 32 MB); a larger
// file is not read at all.
constexpr uint64_t kMaxCacheBytes = uint64_t{256} << 20;

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

// FNV-1a, 64 bits, over the whole file before its trailer: a cache changed by anyone but its
// writer (or cut short) is ignored, not parsed.
uint64_t checksum(const char* data, size_t size) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    hash ^= static_cast<unsigned char>(data[i]);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

class Out {
 public:
  template <class T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(const std::string& s) {
    pod(uint32_t(s.size()));
    bytes.append(s);
  }
  template <class T>
  void vec(const std::vector<T>& v) {
    pod(uint64_t(v.size()));
    bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  std::string bytes;
};

// Reads what Out wrote, never past the end: every count is checked against the bytes left before
// anything of that size is allocated.
class In {
 public:
  In(const char* data, size_t size) : at_(data), left_(size) {}
  template <class T>
  T pod() {
    T v{};
    take(&v, sizeof v);
    return v;
  }
  std::string str() {
    const auto n = pod<uint32_t>();
    if (n > left_) throw std::runtime_error("bad string");
    std::string s(n, '\0');
    take(s.data(), n);
    return s;
  }
  template <class T>
  std::vector<T> vec() {
    const auto n = pod<uint64_t>();
    if (n > left_ / sizeof(T)) throw std::runtime_error("bad vector");
    std::vector<T> v(n);
    take(v.data(), n * sizeof(T));
    return v;
  }
  // At most this many items of at least `item_bytes` each can follow.
  void check_count(uint64_t n, size_t item_bytes) const {
    if (n > left_ / item_bytes) throw std::runtime_error("bad count");
  }
  size_t left() const { return left_; }

 private:
  void take(void* into, size_t n) {
    if (n > left_) throw std::runtime_error("truncated");
    std::memcpy(into, at_, n);
    at_ += n;
    left_ -= n;
  }
  const char* at_;
  size_t left_;
};

// A folder for caches of this user only: made 0700 when missing, and used only when it is a real
// folder (no symbolic link) owned by this user that no one else may write.
bool private_folder(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) return false;
  return info.st_uid == ::geteuid() && (info.st_mode & 022) == 0;
}

std::string cache_folder_of(const std::string& db_path) {
  std::string folder = fs::path(db_path).parent_path().string();
  if (folder.empty()) folder = ".";
  struct stat info {};
  // Beside the database when that folder is this user's alone; elsewhere (a shared or another
  // user's folder) a file planted there could be read as the cache or be overwritten through a
  // link, so the cache goes to the user's own cache folder.
  if (::lstat(folder.c_str(), &info) == 0 && S_ISDIR(info.st_mode) && info.st_uid == ::geteuid() &&
      (info.st_mode & 022) == 0)
    return folder;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (xdg && *xdg == '/') return std::string(xdg) + "/fleetscope";
  if (home && *home == '/') return std::string(home) + "/.cache/fleetscope";
  return {};
}

// Parses a cache held in memory (its checksum verified).
std::optional<TimelineData> parse(const char* data, size_t size, const Stamp& stamp,
                                  int64_t capture_id) {
  In in(data, size);
  char magic[sizeof kMagic];
  for (char& c : magic) c = in.pod<char>();
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0) return std::nullopt;
  if (in.pod<int64_t>() != stamp.size || in.pod<int64_t>() != stamp.mtime) return std::nullopt;
  if (in.pod<int64_t>() != capture_id) return std::nullopt;
  TimelineData data_out;
  data_out.capture_id = capture_id;
  data_out.span = in.pod<TimeRange>();
  const auto names = in.pod<uint64_t>();
  in.check_count(names, sizeof(uint32_t));
  for (uint64_t i = 0; i < names; ++i) data_out.intern(in.str());
  const auto tracks = in.pod<uint64_t>();
  in.check_count(tracks, sizeof(TrackKey));
  for (uint64_t t = 0; t < tracks; ++t) {
    Track track;
    track.key = in.pod<TrackKey>();
    if (static_cast<uint8_t>(track.key.kind) > static_cast<uint8_t>(TrackKind::thread_cpu))
      return std::nullopt;
    track.host_id = in.pod<int64_t>();
    track.host = in.str();
    track.label = in.str();
    data_out.tracks.push_back(std::move(track));
    const auto depths = in.pod<uint64_t>();
    if (depths > TimelineData::max_depth) return std::nullopt;
    std::vector<RowLevels> rows(depths);
    for (auto& row : rows) {
      const auto level_count = in.pod<uint64_t>();
      if (level_count > 64) return std::nullopt;
      row.resize(level_count);
      for (auto& l : row) {
        l.gap_ns = in.pod<int64_t>();
        l.max_duration = in.pod<int64_t>();
        l.items = in.vec<LevelItem>();
        for (const auto& item : l.items)
          if (item.name < 0 || size_t(item.name) >= data_out.names.size() ||
              static_cast<uint8_t>(item.kind) > static_cast<uint8_t>(EventKind::iteration))
            return std::nullopt;
      }
    }
    data_out.levels.push_back(std::move(rows));
  }
  if (in.left() != 0) return std::nullopt;
  data_out.events.resize(data_out.tracks.size());
  data_out.has_events = false;
  return data_out;
}

}  // namespace

std::string timeline_cache_path(const std::string& db_path, int64_t capture_id) {
  const std::string suffix = ".capture" + std::to_string(capture_id) + ".zoom";
  const std::string folder = cache_folder_of(db_path);
  const std::string beside = fs::path(db_path).parent_path().string();
  if (folder == (beside.empty() ? "." : beside)) return db_path + suffix;
  if (folder.empty()) return {};
  // In the user's cache folder: named after the database's full path, so two databases of the
  // same name elsewhere do not share a cache.
  std::error_code ec;
  const std::string absolute = fs::absolute(db_path, ec).lexically_normal().string();
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx",
                static_cast<unsigned long long>(checksum(absolute.data(), absolute.size())));
  return folder + "/" + hash + "-" + fs::path(db_path).filename().string() + suffix;
}

bool save_timeline_cache(const std::string& db_path, const TimelineData& data,
                         uint64_t item_budget) {
  const auto stamp = stamp_of(db_path);
  if (!stamp) return false;
  const std::string path = timeline_cache_path(db_path, data.capture_id);
  if (path.empty() || !private_folder(fs::path(path).parent_path().string())) return false;
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
  Out o;
  o.bytes.append(kMagic, sizeof kMagic);
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
        o.pod(level->gap_ns);
        o.pod(level->max_duration);
        o.vec(level->items);
      }
    }
  }
  o.pod(checksum(o.bytes.data(), o.bytes.size()));
  if (o.bytes.size() > kMaxCacheBytes) return false;
  // A fresh temporary name, created exclusively and never through a link: nothing planted beside
  // the database (a link at a predictable name) can make this write land elsewhere. rename(2)
  // replaces a link at the final name, it does not follow it.
  std::random_device entropy;
  const std::string tmp =
      path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(entropy() % 1000000000u);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t written = 0;
  while (written < o.bytes.size()) {
    ssize_t n = ::write(fd, o.bytes.data() + written, o.bytes.size() - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  const bool complete = written == o.bytes.size() && ::close(fd) == 0;
  if (!complete) {
    if (written != o.bytes.size()) ::close(fd);
    ::unlink(tmp.c_str());
    return false;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

std::optional<TimelineData> load_timeline_cache(const std::string& db_path, int64_t capture_id) {
  const auto stamp = stamp_of(db_path);
  if (!stamp) return std::nullopt;
  const std::string path = timeline_cache_path(db_path, capture_id);
  if (path.empty()) return std::nullopt;
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat info {};
  std::string bytes;
  const bool usable = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) &&
                      info.st_uid == ::geteuid() &&
                      static_cast<uint64_t>(info.st_size) <= kMaxCacheBytes &&
                      static_cast<uint64_t>(info.st_size) >= sizeof kMagic + sizeof(uint64_t);
  if (usable) {
    bytes.resize(static_cast<size_t>(info.st_size));
    size_t got = 0;
    while (got < bytes.size()) {
      ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    bytes.resize(got);
  }
  ::close(fd);
  if (!usable || bytes.size() != static_cast<size_t>(info.st_size)) return std::nullopt;
  const size_t body = bytes.size() - sizeof(uint64_t);
  uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + body, sizeof stored);
  if (stored != checksum(bytes.data(), body)) return std::nullopt;
  try {
    return parse(bytes.data(), body, *stamp, capture_id);
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
