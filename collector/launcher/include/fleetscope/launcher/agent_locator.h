// Where the agent library and libcupti are, for a launcher that sets CUDA_INJECTION64_PATH.
#pragma once

#include <optional>
#include <string>

namespace fleetscope::launcher {

// FLEETSCOPE_AGENT_PATH, else libfleetscope_agent.so next to the running executable, else in
// ../lib relative to it (the build tree and an installed tree).
std::optional<std::string> find_agent(std::string& searched);
// FLEETSCOPE_CUPTI_PATH, else libcupti next to the agent (a carried folder), else the toolkit's.
std::optional<std::string> find_cupti(const std::string& agent_path);

}  // namespace fleetscope::launcher
