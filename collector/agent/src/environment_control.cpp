#include "fleetscope/agent/environment_control.h"

namespace fleetscope::agent {

void EnvironmentControl::start(WindowController& controller) {
  for (const std::string& problem : config_.problems) log_(problem);
  if (!config_.active) return;
  WindowReply reply = controller.open_window(config_.request());
  if (!reply.accepted) log_("not tracing: " + reply.reason);
}

void EnvironmentControl::window_ended(const WindowReport& report) {
  if (!report.complete && !report.note.empty()) log_(report.destination + ": " + report.note);
}

}  // namespace fleetscope::agent
