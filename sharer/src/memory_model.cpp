#include "fleetscope/sharer/memory_model.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace fleetscope::sharer {

namespace {

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

}  // namespace

void MemoryModel::validate() const {
  if (context_bytes < 0 || context_bytes > kMaxContextMib * kMiB)
    throw std::invalid_argument("CUDA context memory must be in [0, 64 GiB], got " +
                                std::to_string(context_bytes) + " bytes");
  if (!std::isfinite(margin.z) || margin.z < 0 || margin.z > 100)
    throw std::invalid_argument("margin sigma must be finite and in [0, 100]");
  if (!std::isfinite(margin.default_relative_stddev) || margin.default_relative_stddev < 0 ||
      margin.default_relative_stddev > 1)
    throw std::invalid_argument("the margin's prior relative deviation must be in [0, 1]");
  if (margin.granularity_bytes < 1 || margin.granularity_bytes > kGiB)
    throw std::invalid_argument("the allocation granularity must be in [1 byte, 1 GiB]");
}

std::optional<int64_t> context_bytes_from_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::optional<int64_t> found;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    const auto equals = line.find('=');
    if (equals == std::string::npos) continue;  // fleetscoped's parser reports malformed lines
    std::string key = trim(line.substr(0, equals));
    for (char& c : key)
      if (c == '-') c = '_';
    if (key != kContextConfigKey) continue;
    const std::string value = trim(line.substr(equals + 1));
    // A whole number of MiB, as fleetscoped's own parser reads the key.
    size_t used = 0;
    long long mib = -1;
    try {
      mib = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != value.size() || value.empty() || mib < 0 || mib > kMaxContextMib)
      throw std::runtime_error(path + ":" + std::to_string(number) + ": " + kContextConfigKey +
                               ": expected a whole number of MiB in 0.." +
                               std::to_string(kMaxContextMib) + ", got '" + value + "'");
    found = static_cast<int64_t>(mib) * kMiB;
  }
  return found;
}

HostMemoryModel host_memory_model(const std::string& config_path) {
  std::string path = config_path;
  if (path.empty()) {
    const char* env = std::getenv("FLEETSCOPE_CONFIG");
    path = env && *env ? env : kDefaultHostConfig;
  }
  HostMemoryModel host;
  if (auto bytes = context_bytes_from_config(path)) {
    host.model.context_bytes = *bytes;
    host.context_source = path;
  } else {
    host.context_source =
        "default (Salus's 300 MiB reservation; " + path + " states no " + kContextConfigKey + ")";
  }
  return host;
}

}  // namespace fleetscope::sharer
