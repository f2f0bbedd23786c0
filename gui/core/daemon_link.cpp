#include "daemon_link.h"

namespace fleetscope::gui {

namespace {
constexpr const char* kDisabled = "daemon connections are disabled in this window";
}

bool UnavailableDaemon::connect(const std::string& socket_path, std::string& error) {
  error = socket_path + ": " + kDisabled;
  return false;
}

std::optional<DaemonStatusView> UnavailableDaemon::status(std::string& error) {
  error = kDisabled;
  return std::nullopt;
}

std::string UnavailableDaemon::apply_blocker() const {
  return kNoDaemonReason;
}

bool UnavailableDaemon::apply(const sharer::ConsolidationPlan&, std::string& error) {
  error = kNoDaemonReason;
  return false;
}

}  // namespace fleetscope::gui
