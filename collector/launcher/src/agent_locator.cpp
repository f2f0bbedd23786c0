#include "fleetscope/launcher/agent_locator.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace fleetscope::launcher {
namespace fs = std::filesystem;

namespace {
constexpr const char* kAgentName = "libfleetscope_agent.so";
}

std::optional<std::string> find_agent(std::string& searched) {
  if (const char* env = std::getenv("FLEETSCOPE_AGENT_PATH"); env && *env) {
    searched = env;
    if (fs::exists(env)) return fs::absolute(env).string();
    return std::nullopt;
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  // Beside the program (build tree), in PREFIX/lib, and in PREFIX/lib/fleetscope where
  // `cmake --install` and the .deb put it (with its CUPTI beside it).
  const fs::path prefix = exe.parent_path().parent_path();
  for (const fs::path& candidate : {exe.parent_path() / kAgentName, prefix / "lib" / kAgentName,
                                    prefix / "lib" / "fleetscope" / kAgentName}) {
    searched += (searched.empty() ? "" : ", ") + candidate.string();
    if (fs::exists(candidate, ec)) return candidate.string();
  }
  return std::nullopt;
}

std::optional<std::string> find_cupti(const std::string& agent_path) {
  if (const char* env = std::getenv("FLEETSCOPE_CUPTI_PATH"); env && *env) return std::string(env);
  std::error_code ec;
  fs::path beside = fs::path(agent_path).parent_path() / "libcupti.so.13";
  if (fs::exists(beside, ec)) return beside.string();
#ifdef FLEETSCOPE_CUPTI_DEFAULT_PATH
  if (fs::exists(FLEETSCOPE_CUPTI_DEFAULT_PATH, ec))
    return std::string(FLEETSCOPE_CUPTI_DEFAULT_PATH);
#endif
  return std::nullopt;
}

}  // namespace fleetscope::launcher
