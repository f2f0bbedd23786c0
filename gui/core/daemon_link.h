// How the GUI reaches a fleetscope daemon (fleetscoped): the sharing panel's Apply and "connect to
// a daemon's socket" go through this interface, so the daemon's RPC client can be wired in without
// touching the widgets. Until the daemon exists, UnavailableDaemon answers every call with the
// reason, which the panel shows next to the disabled Apply button.
#pragma once

#include <string>

#include "fleetscope/sharer/planner.h"

namespace fleetscope::gui {

class DaemonLink {
 public:
  virtual ~DaemonLink() = default;
  virtual bool connected() const = 0;
  // Connects to the daemon's Unix socket; false with `error` set when it cannot.
  virtual bool connect(const std::string& socket_path, std::string& error) = 0;
  // Why Apply is not possible now (empty when it is).
  virtual std::string apply_blocker() const = 0;
  // Hands the plan to the daemon's sharing service; false with `error` set on failure.
  virtual bool apply(const sharer::ConsolidationPlan& plan, std::string& error) = 0;
};

class UnavailableDaemon : public DaemonLink {
 public:
  bool connected() const override { return false; }
  bool connect(const std::string& socket_path, std::string& error) override;
  std::string apply_blocker() const override;
  bool apply(const sharer::ConsolidationPlan& plan, std::string& error) override;
};

}  // namespace fleetscope::gui
