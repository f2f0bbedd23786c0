// RpcHandler's sharing calls (schema/fleetscope.thrift, API version 3): lanes for jobs, plans,
// sharing off, automatic mode and the status the CLI and the GUI show.
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "fleetscope/daemon/rpc_handler.h"
#include "rpc_errors.h"

namespace fleetscope::daemon {
namespace {

using rpc_errors::denied;
using rpc_errors::invalid;

rpc::SharedJob to_shared_job(const sharer::ServiceJob& job) {
  rpc::SharedJob out;
  out.pid = job.pid;
  out.uid = static_cast<int32_t>(job.uid);
  out.workflow = job.workflow;
  out.persistent_bytes = job.persistent_bytes;
  out.ephemeral_bytes = job.ephemeral_bytes;
  out.granted_ns = job.granted_ns;
  if (job.plan_id) out.__set_plan_id(*job.plan_id);
  if (auto slowdown = job.measured_slowdown()) out.__set_measured_slowdown(*slowdown);
  out.__set_iterations_seen(job.iterations);
  return out;
}

// Longest wait one awaitLane call may ask for (the CLI asks again while queued).
constexpr int32_t kMaxAwaitMs = 60'000;

}  // namespace

void RpcHandler::check_sharing_admin(const std::string& what) {
  if (caller_.is_root() || caller_.uid == ::geteuid()) return;
  denied(what + " decides for every user's jobs on this host: it needs root (caller uid " +
         std::to_string(caller_.uid) + ")");
}

rpc::LaneGrant RpcHandler::to_grant(const sharer::LaneTicket& ticket) {
  rpc::LaneGrant grant;
  switch (ticket.state) {
    case sharer::TicketState::kGranted:
      grant.state = rpc::LaneState::GRANTED;
      break;
    case sharer::TicketState::kQueued:
      grant.state = rpc::LaneState::QUEUED;
      break;
    case sharer::TicketState::kUnshared:
      grant.state = rpc::LaneState::UNSHARED;
      break;
  }
  grant.__set_request_id(ticket.request_id);
  if (!ticket.reason.empty()) grant.__set_reason(ticket.reason);
  if (ticket.plan_id) grant.__set_plan_id(*ticket.plan_id);
  if (ticket.state == sharer::TicketState::kGranted) {
    grant.__set_gpu_uuid(ticket.gpu_uuid);
    grant.__set_gpu_index(ticket.gpu_index);
    grant.__set_lane_id(ticket.lane_name);
    grant.__set_lane_bytes(ticket.lane_bytes);
    grant.__set_policy(ticket.policy);
    const auto& gate = core_.sharing().gate_socket();
    if (!gate.empty()) grant.__set_gate_socket(gate);
    grant.__set_ledger_directory(core_.sharing().ledger_directory());
    // Only to the caller the lane was granted for (its uid was checked by requestLane/awaitLane).
    if (auto token = core_.sharing().lane_token(ticket.lane_name)) grant.__set_lane_token(*token);
  }
  return grant;
}

rpc::LaneGrant RpcHandler::request_lane(const rpc::LaneRequest& request) {
  sharer::LaneAsk ask;
  ask.pid = request.pid == 0 ? caller_.pid : request.pid;
  if (ask.pid <= 0) invalid("give the pid of the job (the caller's pid is not known)", "pid");
  auto owner = uid_of_process(ask.pid);
  if (!owner) invalid("no process " + std::to_string(ask.pid) + " on this host", "pid");
  if (!caller_.may_access(*owner))
    denied("process " + std::to_string(ask.pid) + " belongs to uid " + std::to_string(*owner));
  ask.uid = *owner;
  ask.workflow = request.workflow;
  if (request.__isset.persistent_bytes) ask.persistent_bytes = request.persistent_bytes;
  if (request.__isset.ephemeral_bytes) ask.ephemeral_bytes = request.ephemeral_bytes;
  if (request.__isset.gpu) ask.gpu_hint = request.gpu;
  ask.planned_only = request.__isset.planned_only && request.planned_only;
  if (request.__isset.priority) ask.priority = request.priority;
  try {
    return to_grant(core_.sharing().request(ask));
  } catch (const std::invalid_argument& e) {
    invalid(e.what(), "workflow");
  }
}

rpc::LaneGrant RpcHandler::await_lane(int64_t request_id, int32_t timeout_ms) {
  if (timeout_ms < 0 || timeout_ms > kMaxAwaitMs)
    invalid("timeout_ms must be in 0.." + std::to_string(kMaxAwaitMs), "timeout_ms");
  auto ticket = core_.sharing().await(request_id, std::chrono::milliseconds(timeout_ms));
  if (!ticket || !caller_.may_access(ticket->uid)) {
    rpc::NotFound error;
    error.message = "no lane request " + std::to_string(request_id) + " of uid " +
                    std::to_string(caller_.uid) + " (its process ended, or it was released)";
    error.__set_kind("lane_request");
    error.__set_id(request_id);
    throw error;
  }
  return to_grant(*ticket);
}

void RpcHandler::release_lane(int32_t pid) {
  auto owner = uid_of_process(pid);
  if (owner && !caller_.may_access(*owner))
    denied("process " + std::to_string(pid) + " belongs to uid " + std::to_string(*owner));
  if (!owner && !caller_.is_root()) {
    // The process is gone: its lane is reclaimed by the daemon anyway.
    for (const auto& lane : core_.sharing().snapshot().lanes)
      for (const auto& job : lane.jobs)
        if (job.pid == pid && !caller_.may_access(job.uid))
          denied("lane of pid " + std::to_string(pid) + " belongs to another user");
  }
  if (!core_.sharing().release(pid)) {
    rpc::NotFound error;
    error.message = "pid " + std::to_string(pid) + " holds no lane and waits for none";
    error.__set_kind("process");
    error.__set_id(pid);
    throw error;
  }
}

rpc::ShareStatus RpcHandler::share_status() {
  const SharingSnapshot snapshot = core_.sharing().snapshot();
  rpc::ShareStatus out;
  out.enabled = snapshot.enabled;
  out.automatic = snapshot.automatic;
  if (snapshot.automatic) out.__set_max_slowdown(snapshot.max_slowdown);
  for (size_t i = 0; i < snapshot.gpus.size(); ++i) {
    rpc::SharedGpu gpu;
    gpu.index = snapshot.gpus[i].index;
    gpu.uuid = snapshot.gpus[i].uuid;
    gpu.capacity_bytes = snapshot.gpus[i].capacity_bytes;
    gpu.free_bytes = snapshot.gpu_free_bytes[i];
    out.gpus.push_back(gpu);
  }
  for (const auto& lane : snapshot.lanes) {
    rpc::SharedLane row;
    row.gpu_index = lane.gpu_index;
    row.gpu_uuid = lane.gpu_uuid;
    row.lane_id = lane.lane_name;
    row.offset_bytes = lane.offset_bytes;
    row.capacity_bytes = lane.capacity_bytes;
    row.policy = lane.policy;
    if (auto usage = snapshot.usage.find(lane.lane_name); usage != snapshot.usage.end()) {
      row.__set_used_bytes(static_cast<int64_t>(usage->second.used_bytes));
      row.__set_peak_used_bytes(static_cast<int64_t>(usage->second.peak_used_bytes));
    }
    // Lanes and their sizes are the host's; whose jobs are in them is each user's own business.
    int64_t lane_denied = 0;
    for (const auto& job : lane.jobs) {
      auto denials = snapshot.job_denials.find(job.pid);
      const int64_t denied =
          denials == snapshot.job_denials.end() ? 0 : static_cast<int64_t>(denials->second);
      lane_denied += denied;
      if (!caller_.may_access(job.uid)) continue;
      row.jobs.push_back(to_shared_job(job));
      row.jobs.back().__set_denied_allocations(denied);
    }
    row.__set_denied_allocations(lane_denied);
    out.lanes.push_back(std::move(row));
  }
  for (const auto& ticket : snapshot.queued) {
    if (!caller_.may_access(ticket.uid)) continue;
    rpc::SharedJob job;
    job.pid = ticket.pid;
    job.uid = static_cast<int32_t>(ticket.uid);
    job.workflow = "";
    job.persistent_bytes = 0;
    job.ephemeral_bytes = 0;
    job.granted_ns = 0;
    out.queued.push_back(job);
  }
  // Plans: the daemon's live view of the ones it applied, and the older rows of lane_plans.
  std::map<int64_t, const sharer::ServicePlan*> live;
  for (const auto& plan : snapshot.plans) live[plan.id] = &plan;
  for (const auto& row : core_.store().lane_plans(20)) {
    rpc::PlanInfo info;
    info.plan_id = row.id;
    info.created_ns = row.created_ns;
    info.policy = row.policy;
    auto found = live.find(row.id);
    info.active = found != live.end() && found->second->active;
    info.automatic = found != live.end() && found->second->automatic;
    if (found != live.end()) {
      if (found->second->max_slowdown > 0) info.__set_max_slowdown(found->second->max_slowdown);
      // A plan is the host's; which other users' workflows it names is not the caller's business.
      for (auto& workflow : found->second->workflows())
        if (may_see_workflow(workflow)) info.workflows.push_back(std::move(workflow));
      if (!found->second->withdrawn_reason.empty())
        info.__set_withdrawn_reason(found->second->withdrawn_reason);
    } else {
      info.__set_withdrawn_reason("applied by an earlier run of the daemon");
    }
    out.plans.push_back(std::move(info));
  }
  for (auto& row : core_.store().sharing_events(50)) {
    if (!caller_.is_root()) {
      auto visible = visible_event_detail(row.detail_json);
      if (!visible) continue;
      row.detail_json = std::move(*visible);
    }
    rpc::SharingEvent event;
    event.ts_ns = row.ts_ns;
    if (row.plan_id) event.__set_plan_id(*row.plan_id);
    event.kind = row.kind;
    event.detail_json = row.detail_json;
    out.events.push_back(std::move(event));
  }
  if (!snapshot.gate_socket.empty()) out.__set_gate_socket(snapshot.gate_socket);
  if (caller_.is_root() || caller_.uid == ::geteuid())
    out.__set_stray_ledgers(snapshot.stray_ledgers);
  return out;
}

std::optional<std::string> RpcHandler::visible_event_detail(const std::string& detail_json) {
  // An event about one job (it names a pid, a uid or a workflow) is shown to that job's owner
  // only; a plan event shows the caller's own workflows of its list; the rest (sharing off, a
  // plan withdrawn) are the host's and shown to all.
  if (caller_.is_root()) return detail_json;
  auto detail = nlohmann::json::parse(detail_json, nullptr, /*allow_exceptions=*/false);
  if (!detail.is_object()) return std::nullopt;
  if (auto uid = detail.find("uid"); uid != detail.end()) {
    // The job's uid decides (its workflow may have no registered agent).
    if (!uid->is_number_integer() || uid->get<int64_t>() != static_cast<int64_t>(caller_.uid))
      return std::nullopt;
  } else if (auto workflow = detail.find("workflow"); workflow != detail.end()) {
    if (!workflow->is_string() || !may_see_workflow(workflow->get<std::string>()))
      return std::nullopt;
  } else if (detail.contains("pid")) {
    return std::nullopt;  // a job named by its pid alone: whose it is cannot be told
  }
  if (auto workflows = detail.find("workflows"); workflows != detail.end()) {
    nlohmann::json mine = nlohmann::json::array();
    if (workflows->is_array())
      for (const auto& w : *workflows)
        if (w.is_string() && may_see_workflow(w.get<std::string>())) mine.push_back(w);
    *workflows = std::move(mine);
  }
  return detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

rpc::PlanApplied RpcHandler::apply_plan(const rpc::ApplyPlanRequest& request) {
  check_sharing_admin("applying a plan");
  const bool automatic = request.__isset.automatic && request.automatic;
  double max_slowdown = request.__isset.max_slowdown ? request.max_slowdown : 0.0;
  if (request.__isset.max_slowdown && !(max_slowdown >= 1.0 && max_slowdown <= 1e6))
    invalid("max_slowdown must be in [1, 1e6]", "max_slowdown");
  // Unset: the turn policy the plan was made for (SharingHost::apply_plan checks a set one).
  const std::string policy = request.__isset.policy ? request.policy : "";
  try {
    auto applied =
        core_.sharing().apply_plan(request.plan_json, "plan", automatic, max_slowdown, policy);
    rpc::PlanApplied out;
    out.plan_id = applied.plan_id;
    out.workflows = applied.workflows;
    if (applied.superseded) out.__set_superseded_plan_id(*applied.superseded);
    return out;
  } catch (const std::invalid_argument& e) {
    invalid(e.what(), "policy");
  } catch (const std::runtime_error& e) {
    invalid(e.what(), "plan_json");
  }
}

void RpcHandler::sharing_off() {
  check_sharing_admin("switching sharing off");
  core_.sharing().off();
}

void RpcHandler::sharing_on() {
  check_sharing_admin("switching sharing on");
  core_.sharing().on();
}

std::vector<std::string> RpcHandler::remove_stray_ledgers() {
  check_sharing_admin("removing stray lane ledgers");
  return core_.sharing().remove_stray_ledgers();
}

void RpcHandler::set_automatic(bool on, double max_slowdown) {
  check_sharing_admin("automatic mode");
  if (on && !(max_slowdown >= 1.0 && max_slowdown <= 1e6))
    invalid("max_slowdown must be in [1, 1e6]", "max_slowdown");
  core_.sharing().set_automatic(on, max_slowdown);
}

}  // namespace fleetscope::daemon
