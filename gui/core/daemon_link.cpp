#include "daemon_link.h"

namespace fleetscope::gui {

namespace {
constexpr const char* kReason =
    "no daemon connected: the fleetscope daemon (fleetscoped), which carries plans out, is not "
    "part of this build yet, so the plan is shown read-only";
}

bool UnavailableDaemon::connect(const std::string& socket_path, std::string& error) {
  error = socket_path + ": " + kReason;
  return false;
}

std::string UnavailableDaemon::apply_blocker() const {
  return kReason;
}

bool UnavailableDaemon::apply(const sharer::ConsolidationPlan&, std::string& error) {
  error = kReason;
  return false;
}

}  // namespace fleetscope::gui
