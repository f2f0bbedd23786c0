// Shared helpers of the exporter tests: a scratch directory and reading an exported file back.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace fleetscope::exporter::testing {

class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("fleetscope-export-" + std::to_string(::getpid()) + "-" +
             (info ? std::string(info->test_suite_name()) + "-" + info->name() : "x"));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  // FLEETSCOPE_KEEP_TEST_FILES=1 keeps the outputs for a look in Perfetto.
  ~ScratchDir() {
    if (std::getenv("FLEETSCOPE_KEEP_TEST_FILES")) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path_))
      names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::filesystem::path path_;
};

// The file's bytes, gunzipped when it is gzip (zlib reads plain files through too).
inline std::string read_text(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) return {};
  std::string text;
  char chunk[1 << 16];
  int n = 0;
  while ((n = gzread(file, chunk, sizeof chunk)) > 0) text.append(chunk, static_cast<size_t>(n));
  gzclose(file);
  return text;
}

inline std::string read_raw_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// A 64-bit FNV-1a digest of `bytes` in hex: golden tests record an export's whole output as its
// size and this digest (export_golden_test.cpp, chrome_trace_test.cpp).
inline std::string fnv1a_digest(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  static const char kHex[] = "0123456789abcdef";
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) text[static_cast<size_t>(i)] = kHex[h & 0xf];
  return text;
}

inline nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(read_text(path));
}

// Events of the trace matching a predicate.
template <class Predicate>
std::vector<nlohmann::json> events_where(const nlohmann::json& trace, Predicate predicate) {
  std::vector<nlohmann::json> out;
  for (const auto& event : trace.at("traceEvents"))
    if (predicate(event)) out.push_back(event);
  return out;
}

inline std::vector<nlohmann::json> events_of(const nlohmann::json& trace, const std::string& ph,
                                             const std::string& cat = "") {
  return events_where(trace, [&](const nlohmann::json& e) {
    return e.value("ph", "") == ph && (cat.empty() || e.value("cat", "") == cat);
  });
}

}  // namespace fleetscope::exporter::testing
