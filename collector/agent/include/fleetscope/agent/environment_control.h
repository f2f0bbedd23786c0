// The environment window as a control source: when the agent starts, it asks for the one window
// that FLEETSCOPE_OUTPUT / FLEETSCOPE_PART_DIR and the FLEETSCOPE_* limits describe
// (window_config.h). `fleetscope run` and fleets that trace every job from start use it.
#pragma once

#include <functional>
#include <string>

#include "fleetscope/agent/control_source.h"
#include "fleetscope/agent/window_config.h"

namespace fleetscope::agent {

using LogFn = std::function<void(const std::string& line)>;

class EnvironmentControl final : public ControlSource {
 public:
  EnvironmentControl(WindowConfig config, LogFn log)
      : config_(std::move(config)), log_(std::move(log)) {}
  void start(WindowController& controller) override;
  void window_ended(const WindowReport& report) override;
  const char* name() const override { return "environment"; }

 private:
  WindowConfig config_;
  LogFn log_;
};

}  // namespace fleetscope::agent
