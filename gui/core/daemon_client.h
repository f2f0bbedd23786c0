// The GUI's DaemonLink over the daemon's Thrift API (FleetscopeHost), through the same client
// connection as the `fleetscope status` command (fleetscope/rpc/host_client.h). Each call opens
// a connection, asks, and closes it, as the CLI does: the GUI holds no socket between refreshes
// and a restarted daemon is simply reached again.
#pragma once

#include "daemon_link.h"

namespace fleetscope::gui {

class DaemonClient : public DaemonLink {
 public:
  // timeout_ms bounds connect, send and receive of each call (the GUI must not hang on a stuck
  // daemon).
  explicit DaemonClient(int timeout_ms = 5000) : timeout_ms_(timeout_ms) {}
  bool connected() const override { return !address_.empty(); }
  bool connect(const std::string& socket_path, std::string& error) override;
  std::optional<DaemonStatusView> status(std::string& error) override;
  std::string apply_blocker() const override;
  std::optional<int64_t> apply(const sharer::ConsolidationPlan& plan, const std::string& policy,
                               std::string& error) override;

 private:
  std::optional<DaemonStatusView> ask_status(const std::string& address, std::string& error) const;

  int timeout_ms_;
  std::string address_;  // empty until a connect succeeded
};

}  // namespace fleetscope::gui
