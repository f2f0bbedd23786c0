// Runs a command with extra environment variables and waits for it, the way a shell would report
// its status: the exit code, or 128 + the signal that killed it; 127 when it could not be started.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fleetscope::launcher {

int run_child(const std::vector<std::string>& argv,
              const std::vector<std::pair<std::string, std::string>>& environment,
              std::string& error);

}  // namespace fleetscope::launcher
