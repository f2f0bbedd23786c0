#pragma once
// Paths of the reference data (tests/data) and a scratch-file helper for the sharer's tests.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fleetscope::sharer::testing {

inline std::string jobs_data(const std::string& name) {
  return std::string(FLEETSCOPE_SHARED_DATA) + "/jobs/" + name;
}

// Writes `contents` to a file unique to the running test and process (two builds' suites may run
// the same test at once) and returns its path.
inline std::string scratch_file(const std::string& name, const std::string& contents) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto dir = std::filesystem::temp_directory_path() / "fleetscope_sharer_tests" /
                   (std::string(info->test_suite_name()) + "." + info->name() + "." +
                    std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / name).string();
  std::ofstream(path) << contents;
  return path;
}

}  // namespace fleetscope::sharer::testing
