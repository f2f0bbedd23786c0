// The importers read files, so each fuzz input is written to one private file first (in a
// directory of this process, removed at exit).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace fleetscope::fuzz {

inline const std::string& input_path(const char* suffix) {
  struct Dir {
    std::filesystem::path path;
    Dir() {
      std::string pattern =
          (std::filesystem::temp_directory_path() / "fleetscope-fuzz-XXXXXX").string();
      path = ::mkdtemp(pattern.data());
    }
    ~Dir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static Dir dir;
  static const std::string path = (dir.path / (std::string("input") + suffix)).string();
  return path;
}

inline const std::string& write_input(const uint8_t* data, size_t size, const char* suffix) {
  const std::string& path = input_path(suffix);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace fleetscope::fuzz
