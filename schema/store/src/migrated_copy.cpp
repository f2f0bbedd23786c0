#include "migrated_copy.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <regex>
#include <vector>

#include "fleetscope/store/rows.h"

namespace fleetscope::store::migrated_copy {
namespace fs = std::filesystem;

namespace {

// FNV-1a 64 (the zoom cache's checksum, timeline_cache.cpp): a name and a fingerprint, not a
// protection against someone who writes the user's own cache folder.
struct Fnv {
  uint64_t hash = 0xcbf29ce484222325ull;
  void add(const void* data, size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) {
      hash ^= bytes[i];
      hash *= 0x100000001b3ull;
    }
  }
  template <class T>
  void add(const T& value) {
    add(&value, sizeof value);
  }
  std::string hex() const {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
    return text;
  }
};

int64_t ns_of(const struct timespec& t) {
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// A folder of this user's alone: a real folder (no link) owned by the user, that no one else may
// write and that its owner has not made read-only.
bool own_writable_folder(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) return false;
  return info.st_uid == ::geteuid() && (info.st_mode & 022) == 0 && (info.st_mode & S_IWUSR) != 0;
}

// "<16 hex>-<name>.<16 hex>.v<N>.db": the source's path hash, its identity and the schema.
const std::regex& entry_name() {
  static const std::regex re(R"(([0-9a-f]{16})-.*\.([0-9a-f]{16})\.v[0-9]+\.db)");
  return re;
}

}  // namespace

std::optional<std::string> identity(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return std::nullopt;
  }
  Fnv fnv;
  fnv.add(uint64_t(st.st_dev));
  fnv.add(uint64_t(st.st_ino));
  fnv.add(int64_t(st.st_size));
  fnv.add(ns_of(st.st_mtim));
  fnv.add(ns_of(st.st_ctim));
  // The header (its change counter moves with every commit of a rollback-journal file) and 8
  // pages spread over the file: a file rewritten within one timestamp tick at a reused inode.
  std::vector<char> block(4096);
  const int64_t size = st.st_size;
  for (int i = 0; i <= 8; ++i) {
    const int64_t at = i == 0 ? 0 : (size / 9) * i / 4096 * 4096;
    const ssize_t got = ::pread(fd, block.data(), block.size(), at);
    if (got > 0) fnv.add(block.data(), size_t(got));
  }
  ::close(fd);
  // A WAL file's commits land in its -wal first: its size and time are part of the content.
  struct stat wal {};
  if (::stat((path + "-wal").c_str(), &wal) == 0) {
    fnv.add(int64_t(wal.st_size));
    fnv.add(ns_of(wal.st_mtim));
  }
  return fnv.hex();
}

std::string folder() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string base;
  if (xdg && *xdg == '/')
    base = std::string(xdg) + "/fleetscope";
  else if (home && *home == '/')
    base = std::string(home) + "/.cache/fleetscope";
  else
    return {};
  const std::string dir = base + "/migrated";
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(base, ec);
    ::mkdir(dir.c_str(), 0700);
  }
  return own_writable_folder(dir) ? dir : std::string();
}

std::string entry_path(const std::string& folder, const std::string& source,
                       const std::string& identity) {
  std::error_code ec;
  const std::string absolute = fs::absolute(source, ec).lexically_normal().string();
  Fnv path_hash;
  path_hash.add(absolute.data(), absolute.size());
  return folder + "/" + path_hash.hex() + "-" + fs::path(source).filename().string() + "." +
         identity + ".v" + std::to_string(kSchemaVersion) + ".db";
}

bool entry_complete(const std::string& entry) {
  const int fd = ::open(entry.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  unsigned char header[100];
  const bool read = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
                    ::pread(fd, header, sizeof header, 0) == ssize_t(sizeof header);
  ::close(fd);
  if (!read || std::memcmp(header, "SQLite format 3", 16) != 0) return false;
  // The file format (https://www.sqlite.org/fileformat.html): page size at offset 16 (1 means
  // 65536), the database size in pages at 28, valid when the change counter at 24 equals the
  // version-valid-for number at 92.
  auto be32 = [&](int at) {
    return uint32_t(header[at]) << 24 | uint32_t(header[at + 1]) << 16 |
           uint32_t(header[at + 2]) << 8 | uint32_t(header[at + 3]);
  };
  const uint32_t raw_page = uint32_t(header[16]) << 8 | header[17];
  const uint64_t page_size = raw_page == 1 ? 65536 : raw_page;
  if (page_size < 512 || be32(24) != be32(92)) return false;
  return uint64_t(st.st_size) == page_size * be32(28);
}

void touch(const std::string& entry) {
  ::utimensat(AT_FDCWD, entry.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
}

void note_source(const std::string& entry, const std::string& source) {
  std::error_code ec;
  const std::string absolute = fs::absolute(source, ec).lexically_normal().string();
  const std::string side = entry + ".source";
  const int fd = ::open(side.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const bool written = ::write(fd, absolute.data(), absolute.size()) == ssize_t(absolute.size());
  ::close(fd);
  if (!written) fs::remove(side, ec);
}

namespace {

// Whether the file the entry was copied from is gone (no note: gone as far as anyone knows).
bool source_gone(const fs::path& entry) {
  const int fd = ::open((entry.string() + ".source").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return true;
  char buffer[4096];
  const ssize_t got = ::read(fd, buffer, sizeof buffer);
  ::close(fd);
  if (got <= 0 || size_t(got) == sizeof buffer) return true;
  struct stat st {};
  return ::stat(std::string(buffer, size_t(got)).c_str(), &st) != 0;
}

}  // namespace

void clean(const std::string& folder, const std::string& kept, uint64_t max_bytes) {
  std::smatch kept_match;
  const std::string kept_name = fs::path(kept).filename().string();
  if (!std::regex_match(kept_name, kept_match, entry_name())) return;
  const std::string kept_source = kept_match[1];
  struct Entry {
    fs::path path;
    uint64_t bytes = 0;
    int64_t used_ns = 0;
  };
  std::vector<Entry> others;
  uint64_t total = 0;
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  constexpr int64_t kUnusedNs = int64_t{30} * 24 * 3600 * 1'000'000'000;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, entry_name())) continue;  // temporaries, the lock file
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    total += uint64_t(st.st_size);
    if (name == kept_name) continue;
    std::error_code remove_error;
    if (m[1] == kept_source || now_ns - ns_of(st.st_mtim) > kUnusedNs || source_gone(it->path())) {
      // A reader that has it open keeps reading it (the file lives until it is closed).
      fs::remove(it->path(), remove_error);
      fs::remove(it->path().string() + ".source", remove_error);
      total -= uint64_t(st.st_size);
      continue;
    }
    others.push_back({it->path(), uint64_t(st.st_size), ns_of(st.st_mtim)});
  }
  std::sort(others.begin(), others.end(),
            [](const Entry& a, const Entry& b) { return a.used_ns < b.used_ns; });
  for (const Entry& entry : others) {
    if (total <= max_bytes) break;
    std::error_code remove_error;
    if (fs::remove(entry.path, remove_error)) total -= entry.bytes;
    fs::remove(entry.path.string() + ".source", remove_error);
  }
}

BuildLock::BuildLock(const std::string& folder) {
  fd_ = ::open((folder + "/build.lock").c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

BuildLock::~BuildLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace fleetscope::store::migrated_copy
