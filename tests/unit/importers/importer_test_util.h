// Helpers shared by the importer tests: scratch folders, file writing, row counts.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "fleetscope/store/reader.h"

namespace fleetscope::importers::test {

namespace fs = std::filesystem;

inline std::string kineto_dir() {
  return std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto";
}

// A fresh empty folder per test, removed at the end.
class ScratchDir {
 public:
  ScratchDir() {
    std::random_device rd;
    path_ =
        fs::temp_directory_path() / ("fs-importers-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(file(name), std::ios::binary) << bytes;
    return file(name);
  }
  // Every entry of the folder (to check that nothing, temporary files included, was left behind).
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline std::string gzip_bytes(const std::string& data) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(compressBound(static_cast<uLong>(data.size())) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline int64_t scalar(const store::Reader& r, const std::string& sql) {
  auto q = r.query(sql);
  if (q.rows.empty() || q.rows[0].empty() || !q.rows[0][0]) return -1;
  return std::stoll(*q.rows[0][0]);
}

inline std::optional<std::string> text(const store::Reader& r, const std::string& sql) {
  auto q = r.query(sql);
  if (q.rows.empty() || q.rows[0].empty()) return std::nullopt;
  return q.rows[0][0];
}

inline int64_t count(const store::Reader& r, const std::string& table, int64_t capture = 1) {
  return scalar(r,
                "SELECT COUNT(*) FROM " + table + " WHERE captureId = " + std::to_string(capture));
}

}  // namespace fleetscope::importers::test
