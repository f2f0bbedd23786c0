#include "daemon_client.h"

#include <thrift/transport/TTransportException.h>

#include <nlohmann/json.hpp>

#include "fleetscope/rpc/host_client.h"

namespace fleetscope::gui {

namespace {

DaemonStatusView to_view(const std::string& address, const rpc::DaemonStatus& s) {
  DaemonStatusView v;
  v.address = address;
  v.daemon_version = s.version.daemon_version;
  v.hostname = s.version.hostname;
  v.api_version = s.version.api_version;
  v.schema_version = s.version.schema_version;
  v.database_path = s.database_path;
  v.started_ns = s.started_ns;
  v.device_sampling = s.device_sampling;
  if (s.__isset.device_sampling_note) v.device_sampling_note = s.device_sampling_note;
  v.caller_uid = s.caller_uid;
  for (const auto& a : s.agents) {
    DaemonAgent agent{a.agent_id, a.pid,     a.uid,        a.workflow,     a.workflow_source,
                      {},         a.devices, std::nullopt, a.registered_ns};
    if (a.__isset.command) agent.command = a.command;
    if (a.__isset.open_capture_id) agent.open_capture_id = a.open_capture_id;
    v.agents.push_back(std::move(agent));
  }
  for (const auto& d : s.devices) {
    DaemonDevice device;
    device.index = d.index;
    device.name = d.name;
    if (d.__isset.uuid) device.uuid = d.uuid;
    if (d.__isset.gpu_utilization_pct) device.utilization_pct = d.gpu_utilization_pct;
    if (d.__isset.power_watts) device.power_watts = d.power_watts;
    if (d.__isset.memory_used_bytes) device.memory_used_bytes = d.memory_used_bytes;
    if (d.__isset.memory_total_bytes) device.memory_total_bytes = d.memory_total_bytes;
    v.devices.push_back(std::move(device));
  }
  for (const auto& w : s.open_windows) {
    DaemonWindow window{w.capture_id, w.pids, w.start_ns, std::nullopt};
    if (w.__isset.deadline_ns) window.deadline_ns = w.deadline_ns;
    v.open_windows.push_back(std::move(window));
  }
  return v;
}

}  // namespace

std::optional<DaemonStatusView> DaemonClient::ask_status(const std::string& address,
                                                         std::string& error) const {
  try {
    rpc::HostConnection daemon(address, timeout_ms_);
    rpc::DaemonStatus status;
    daemon->status(status);
    return to_view(address, status);
  } catch (const rpc::PermissionDenied& e) {
    error = address + ": permission denied: " + e.message;
  } catch (const apache::thrift::transport::TTransportException& e) {
    error = address + ": cannot reach fleetscoped (" + e.what() + "); is the daemon running?";
  } catch (const std::exception& e) {
    error = address + ": " + e.what();
  }
  return std::nullopt;
}

bool DaemonClient::connect(const std::string& socket_path, std::string& error) {
  if (!ask_status(socket_path, error)) return false;
  address_ = socket_path;
  return true;
}

std::optional<DaemonStatusView> DaemonClient::status(std::string& error) {
  if (!connected()) {
    error = kNoDaemonReason;
    return std::nullopt;
  }
  return ask_status(address_, error);
}

std::string DaemonClient::apply_blocker() const {
  return connected() ? std::string() : kNoDaemonReason;
}

std::optional<int64_t> DaemonClient::apply(const sharer::ConsolidationPlan& plan,
                                           const std::string& policy, std::string& error) {
  if (!connected()) {
    error = kNoDaemonReason;
    return std::nullopt;
  }
  // What `fleetscope share apply PLAN.json` sends: the plan as `share plan --format json` writes
  // it.
  try {
    rpc::HostConnection daemon(address_, timeout_ms_);
    rpc::ApplyPlanRequest request;
    request.plan_json = sharer::plan_to_json(plan).dump();
    request.__set_policy(policy);
    rpc::PlanApplied applied;
    daemon->applyPlan(applied, request);
    return applied.plan_id;
  } catch (const rpc::InvalidRequest& e) {
    error = address_ + ": the daemon refused the plan: " + e.message;
  } catch (const rpc::PermissionDenied& e) {
    error = address_ + ": permission denied: " + e.message;
  } catch (const apache::thrift::transport::TTransportException& e) {
    error = address_ + ": cannot reach fleetscoped (" + e.what() + "); is the daemon running?";
  } catch (const std::exception& e) {
    error = address_ + ": " + e.what();
  }
  return std::nullopt;
}

}  // namespace fleetscope::gui
