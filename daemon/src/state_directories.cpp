#include "fleetscope/daemon/state_directories.h"

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace fleetscope::daemon {

namespace fs = std::filesystem;

void prepare_state_directories(const DaemonConfig& config) {
  const std::vector<std::pair<std::string, std::string>> files = {
      {"the database", config.database},
      {"the API socket", config.socket},
      {"the agent socket", config.agent_socket},
      {"the gate socket", gate_socket_path(config)},
  };
  for (const auto& [what, file] : files) {
    const fs::path folder = fs::path(file).parent_path();
    if (folder.empty()) continue;  // a bare name: the working directory, which exists
    std::error_code error;
    fs::create_directories(folder, error);
    if (error)
      throw std::runtime_error("cannot create directory " + folder.string() + " (for " + what +
                               " " + file + "): " + error.message() +
                               "; create it, run as a user who may, or choose another path "
                               "(fleetscoped --help)");
  }
}

}  // namespace fleetscope::daemon
