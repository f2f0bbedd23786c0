#include "fleetscope/lanes/lane_environment.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "fleetscope/lanes/lane_segment.h"

namespace fleetscope::lanes {

std::optional<uint64_t> parse_byte_size(const std::string& text) {
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])))) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str()) return std::nullopt;
  std::string unit(end);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 1;
  if (unit.empty() || unit == "B") {
    scale = 1;
  } else if (unit == "K" || unit == "KIB") {
    scale = 1024.0;
  } else if (unit == "M" || unit == "MIB") {
    scale = 1024.0 * 1024;
  } else if (unit == "G" || unit == "GIB") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "T" || unit == "TIB") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  } else {
    return std::nullopt;
  }
  double bytes = value * scale;
  if (!(bytes >= 0) || bytes >= 18446744073709551615.0) return std::nullopt;
  if (unit.empty() && std::floor(value) != value) return std::nullopt;  // fractional bytes
  return static_cast<uint64_t>(bytes);
}

Environment interposition_environment(const LaneAssignment& assignment, const std::string& library,
                                      const std::string& existing_preload) {
  Environment environment;
  std::string preload = library;
  if (!existing_preload.empty()) preload += ":" + existing_preload;
  environment.emplace_back("LD_PRELOAD", preload);
  environment.emplace_back(kLaneIdVariable, assignment.lane_id);
  if (assignment.lane_bytes > 0) {
    environment.emplace_back(kLaneBytesVariable, std::to_string(assignment.lane_bytes));
  }
  if (!assignment.ledger_directory.empty()) {
    environment.emplace_back(kLaneDirectoryVariable, assignment.ledger_directory);
  }
  if (!assignment.gpu_uuid.empty())
    environment.emplace_back(kLaneGpuUuidVariable, assignment.gpu_uuid);
  if (!assignment.gate_socket.empty())
    environment.emplace_back(kGateSocketVariable, assignment.gate_socket);
  if (!assignment.token.empty()) environment.emplace_back(kLaneTokenVariable, assignment.token);
  if (assignment.priority != 0) {
    environment.emplace_back(kJobPriorityVariable, std::to_string(assignment.priority));
  }
  if (assignment.total_steps > 0) {
    environment.emplace_back(kJobStepsVariable, std::to_string(assignment.total_steps));
  }
  return environment;
}

namespace {

bool parse_integer(const char* text, long long minimum, long long maximum, long long* out) {
  if (!text || !*text) return false;
  errno = 0;
  char* end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < minimum || value > maximum) return false;
  *out = value;
  return true;
}

}  // namespace

std::optional<LaneAssignment> assignment_from_environment(std::string* error) {
  const char* lane_id = std::getenv(kLaneIdVariable);
  if (!lane_id || !*lane_id) return std::nullopt;
  LaneAssignment assignment;
  if (!LaneSegment::valid_lane_id(lane_id)) {
    *error = std::string(kLaneIdVariable) + "='" + lane_id +
             "': expected 1-100 characters from [A-Za-z0-9._-]";
    return std::nullopt;
  }
  assignment.lane_id = lane_id;
  if (const char* bytes = std::getenv(kLaneBytesVariable); bytes && *bytes) {
    auto parsed = parse_byte_size(bytes);
    if (!parsed) {
      *error =
          std::string(kLaneBytesVariable) + "='" + bytes + "': expected a byte count such as 8GiB";
      return std::nullopt;
    }
    assignment.lane_bytes = *parsed;
  }
  if (const char* directory = std::getenv(kLaneDirectoryVariable))
    assignment.ledger_directory = directory;
  if (const char* uuid = std::getenv(kLaneGpuUuidVariable)) assignment.gpu_uuid = uuid;
  if (const char* socket = std::getenv(kGateSocketVariable)) assignment.gate_socket = socket;
  if (const char* token = std::getenv(kLaneTokenVariable)) assignment.token = token;
  long long value = 0;
  if (const char* priority = std::getenv(kJobPriorityVariable); priority && *priority) {
    if (!parse_integer(priority, -1000000, 1000000, &value)) {
      *error = std::string(kJobPriorityVariable) + "='" + priority + "': expected an integer";
      return std::nullopt;
    }
    assignment.priority = static_cast<int>(value);
  }
  if (const char* steps = std::getenv(kJobStepsVariable); steps && *steps) {
    if (!parse_integer(steps, 0, (1ll << 62), &value)) {
      *error = std::string(kJobStepsVariable) + "='" + steps + "': expected a non-negative integer";
      return std::nullopt;
    }
    assignment.total_steps = static_cast<uint64_t>(value);
  }
  return assignment;
}

Environment mps_client_environment(const MpsClientLimits& limits, std::string* error) {
  Environment environment;
  if (limits.active_thread_percentage < 1 || limits.active_thread_percentage > 100) {
    *error = "active thread percentage " + std::to_string(limits.active_thread_percentage) +
             ": expected 1..100";
    return {};
  }
  if (limits.device_ordinal < 0) {
    *error = "device ordinal " + std::to_string(limits.device_ordinal) + ": expected >= 0";
    return {};
  }
  constexpr uint64_t kMiB = 1024 * 1024;
  if (limits.pinned_memory_bytes > 0) {
    uint64_t mebibytes = limits.pinned_memory_bytes / kMiB;
    if (mebibytes == 0) {
      *error = "pinned memory limit " + std::to_string(limits.pinned_memory_bytes) +
               " bytes: MPS takes whole MiB, expected at least 1 MiB";
      return {};
    }
    environment.emplace_back(
        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
        std::to_string(limits.device_ordinal) + "=" + std::to_string(mebibytes) + "M");
  }
  environment.emplace_back("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                           std::to_string(limits.active_thread_percentage));
  if (!limits.pipe_directory.empty())
    environment.emplace_back("CUDA_MPS_PIPE_DIRECTORY", limits.pipe_directory);
  return environment;
}

}  // namespace fleetscope::lanes
