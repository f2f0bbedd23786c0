// How the GUI reaches a fleetscope daemon (fleetscoped): "connect to a daemon's socket", the
// daemon panel (its agents, GPUs and open trace windows) and the sharing panel's Apply go through
// this interface, so the widgets never see Thrift. DaemonClient (daemon_client.h) implements it
// over the daemon's real API.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/sharer/planner.h"

namespace fleetscope::gui {

// What the daemon reports about itself (FleetscopeHost.status, schema/fleetscope.thrift), in
// plain types for the models.
struct DaemonAgent {
  int64_t agent_id = 0;
  int32_t pid = 0, uid = 0;
  std::string workflow, workflow_source, command;
  std::vector<int32_t> devices;
  std::optional<int64_t> open_capture_id;
  int64_t registered_ns = 0;
};

struct DaemonDevice {
  int32_t index = 0;
  std::string name, uuid;
  std::optional<double> utilization_pct, power_watts;
  std::optional<int64_t> memory_used_bytes, memory_total_bytes;
};

struct DaemonWindow {
  int64_t capture_id = 0;
  std::vector<int32_t> pids;
  int64_t start_ns = 0;
  std::optional<int64_t> deadline_ns;
};

struct DaemonStatusView {
  std::string address;  // the socket it came from
  std::string daemon_version, hostname, database_path, device_sampling_note;
  int32_t api_version = 0, schema_version = 0, caller_uid = -1;
  int64_t started_ns = 0;
  bool device_sampling = false;
  std::vector<DaemonAgent> agents;
  std::vector<DaemonDevice> devices;
  std::vector<DaemonWindow> open_windows;
};

class DaemonLink {
 public:
  virtual ~DaemonLink() = default;
  virtual bool connected() const = 0;
  // Connects to the daemon's Unix socket (or 127.0.0.1:PORT) and reads its status; false with
  // `error` set when it cannot.
  virtual bool connect(const std::string& socket_path, std::string& error) = 0;
  // The daemon's status now; nothing with `error` set when not connected or unreachable.
  virtual std::optional<DaemonStatusView> status(std::string& error) = 0;
  // Why Apply is not possible now (empty when it is).
  virtual std::string apply_blocker() const = 0;
  // Hands the plan to the daemon's sharing service (FleetscopeHost.applyPlan, as `fleetscope
  // share apply --policy POLICY` does; `policy`: the lanes' turn policy, one of
  // lanes::turn_policy_names()); the daemon's lane_plans id, or nothing with `error` set.
  virtual std::optional<int64_t> apply(const sharer::ConsolidationPlan& plan,
                                       const std::string& policy, std::string& error) = 0;
};

// Apply's reason while no daemon is connected.
inline constexpr const char* kNoDaemonReason =
    "no daemon connected: use File > Connect to daemon… to reach fleetscoped; until then the "
    "plan is shown read-only";

}  // namespace fleetscope::gui
