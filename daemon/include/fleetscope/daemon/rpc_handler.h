// The daemon's API (schema/fleetscope.thrift, service FleetscopeHost) as a plain class: one per
// connection, bound to the caller the kernel identified. Every per-user rule lives here: a
// non-root caller sees and traces only its own uid's processes, workflows and captures.
// thrift_server.cpp adapts it to the generated interface; tests call it directly.
#pragma once

#include <optional>
#include <vector>

#include "fleetscope/daemon/daemon_core.h"
#include "fleetscope/daemon/peer.h"
#include "fleetscope_types.h"

namespace fleetscope::daemon {

class RpcHandler {
 public:
  RpcHandler(DaemonCore& core, Caller caller) : core_(core), caller_(caller) {}

  rpc::VersionInfo version();
  std::vector<rpc::Capture> list_captures(const rpc::CaptureFilter& filter);
  rpc::Capture get_capture(int64_t capture_id);
  rpc::KernelWindow kernels_in_window(const rpc::KernelWindowRequest& request);
  std::vector<rpc::Finding> findings(int64_t capture_id);
  rpc::TraceStarted start_trace(const rpc::TraceRequest& request);

  rpc::DaemonStatus status();
  std::vector<rpc::Job> jobs();
  std::vector<rpc::WorkflowMetric> metrics(const rpc::MetricsQuery& query);
  rpc::TraceStarted start_trace_of_workflow(const rpc::TraceByName& request);
  rpc::TraceProgress trace_progress(int64_t capture_id, int32_t timeout_ms);

  // The sharing service (rpc_sharing.cpp). A non-root caller asks lanes for its own processes
  // only; applying plans, switching sharing off and automatic mode need root (or the daemon's
  // uid): they decide for every user's jobs on the host.
  rpc::LaneGrant request_lane(const rpc::LaneRequest& request);
  rpc::LaneGrant await_lane(int64_t request_id, int32_t timeout_ms);
  void release_lane(int32_t pid);
  rpc::ShareStatus share_status();
  rpc::PlanApplied apply_plan(const rpc::ApplyPlanRequest& request);
  void sharing_off();
  void set_automatic(bool on, double max_slowdown);
  void sharing_on();
  std::vector<std::string> remove_stray_ledgers();

  const Caller& caller() const { return caller_; }

  // Root sees every workflow; another uid only those it owns (the first uid that registered it).
  bool may_see_workflow(const std::string& workflow);
  // A sharing event's detail (JSON) as this caller may see it in shareStatus; nullopt: not at all.
  std::optional<std::string> visible_event_detail(const std::string& detail_json);

 private:
  void check_sharing_admin(const std::string& what);
  rpc::LaneGrant to_grant(const sharer::LaneTicket& ticket);
  void check_capture_access(int64_t capture_id);

  DaemonCore& core_;
  Caller caller_;
};

// The agent link (service FleetscopeAgentLink), one per agent connection.
class AgentLinkHandler {
 public:
  AgentLinkHandler(DaemonCore& core, Caller caller) : core_(core), caller_(caller) {}
  ~AgentLinkHandler();  // an agent whose control connection ends is gone

  rpc::AgentWelcome register_agent(const rpc::AgentHello& hello);
  rpc::AgentOrder await_order(int64_t agent_id, int32_t timeout_ms);
  // Takes the batch (consumed); returns the agent's committed sequence (TraceControl::on_batch).
  int64_t push_records(int64_t agent_id, rpc::RecordBatch&& batch);
  void window_closed(int64_t agent_id, const rpc::WindowClosed& closed);

 private:
  DaemonCore& core_;
  Caller caller_;
  int64_t registered_id_ = 0;  // the agent this connection registered, if it did
};

// Largest record batch an agent may send (rows); agents split their flushes to stay below it.
inline constexpr int32_t kMaxBatchRows = 16384;

// What the daemon keeps of an agent's hello (validated_hello): names (workflow, its source, the
// hostname) of at most 256 bytes and a command line of at most 4 KiB, valid UTF-8 (invalid bytes
// become U+FFFD), with a note when cut; a parent chain and a device list of at most 64 entries.
// So `status` and `jobs` answers stay far below the frame limit whatever agents claim.
inline constexpr size_t kMaxNameBytes = 256;
inline constexpr size_t kMaxCommandBytes = 4096;
inline constexpr size_t kMaxListEntries = 64;
// The scheduler labels an agent may declare (AgentHello.labels); others are dropped.
inline constexpr const char* kSchedulerLabelKeys[] = {
    "slurm_job_id", "slurm_job_user",   "slurm_array_job_id", "slurm_array_task_id",
    "k8s_pod_uid",  "k8s_container_id", "k8s_namespace",      "k8s_pod"};
rpc::AgentHello validated_hello(const rpc::AgentHello& claimed);

}  // namespace fleetscope::daemon
