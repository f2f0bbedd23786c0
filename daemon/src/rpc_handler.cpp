#include "fleetscope/daemon/rpc_handler.h"

#include <algorithm>
#include <map>
#include <set>

#include "fleetscope/common/untrusted_text.h"
#include "fleetscope/daemon/batch_decoder.h"
#include "fleetscope/daemon/rpc_views.h"
#include "fleetscope/daemon/scheduler_identity.h"
#include "fleetscope/store/reader.h"
#include "fleetscope_constants.h"
#include "rpc_errors.h"

namespace fleetscope::daemon {
namespace {

using rpc_errors::denied;
using rpc_errors::invalid;

[[noreturn]] void not_found(const std::string& message, const std::string& kind, int64_t id) {
  rpc::NotFound error;
  error.message = message;
  error.__set_kind(kind);
  error.__set_id(id);
  throw error;
}

rpc::AgentInfo to_info(const AgentEntry& e) {
  rpc::AgentInfo info;
  info.agent_id = e.id;
  info.pid = e.pid;
  info.uid = static_cast<int32_t>(e.uid);
  info.workflow = e.workflow;
  info.workflow_source = e.workflow_source;
  if (!e.command.empty()) info.__set_command(e.command);
  if (!e.labels.empty()) info.__set_labels(e.labels);
  info.parent_chain = e.parent_chain;
  info.devices = e.devices;
  info.registered_ns = e.registered_ns;
  if (e.open_capture) info.__set_open_capture_id(*e.open_capture);
  return info;
}

// Replies are kept below this many bytes so that they fit a client's frame limit (16 MiB by
// default, rpc::TransportLimits) with room for the envelope: a reply that outgrew it would fail
// whole ("oversized frame") instead of answering in part.
constexpr size_t kMaxReplyBytes = 8u << 20;
// Bytes a row takes on the wire besides its strings (field headers and numbers), generously.
constexpr size_t kRowOverheadBytes = 128;

rpc::Severity::type severity_of(const std::string& text) {
  static const std::map<std::string, rpc::Severity::type> table = {
      {"info", rpc::Severity::INFO},
      {"low", rpc::Severity::LOW},
      {"medium", rpc::Severity::MEDIUM},
      {"high", rpc::Severity::HIGH},
      {"critical", rpc::Severity::CRITICAL}};
  auto it = table.find(text);
  return it == table.end() ? rpc::Severity::INFO : it->second;
}

}  // namespace

rpc::VersionInfo RpcHandler::version() {
  rpc::VersionInfo v;
  v.api_version = rpc::g_fleetscope_constants.API_VERSION_3;
  v.daemon_version = FLEETSCOPE_DAEMON_VERSION;
  v.schema_version = core_.store().schema_version();
  v.__set_hostname(core_.hostname());
  return v;
}

void RpcHandler::check_capture_access(int64_t capture_id) {
  if (!core_.store().capture(capture_id))
    not_found("no capture " + std::to_string(capture_id) + " in " + core_.store().path(), "capture",
              capture_id);
  if (caller_.is_root()) return;
  auto owner = core_.store().capture_owner(capture_id);
  if (!owner || !caller_.may_access(static_cast<uid_t>(*owner)))
    denied("capture " + std::to_string(capture_id) + " belongs to another user");
}

std::vector<rpc::Capture> RpcHandler::list_captures(const rpc::CaptureFilter& filter) {
  int limit = filter.__isset.limit ? filter.limit : 100;
  if (limit <= 0 || limit > 100000) invalid("limit must be in 1..100000", "limit");
  auto all = core_.store().captures(
      filter.__isset.workflow_id ? std::optional<int64_t>(filter.workflow_id) : std::nullopt,
      filter.__isset.since_ns ? std::optional<int64_t>(filter.since_ns) : std::nullopt,
      caller_.is_root() ? limit : 100000);
  if (caller_.is_root()) return all;
  std::vector<rpc::Capture> mine;
  for (auto& c : all) {
    auto owner = core_.store().capture_owner(c.id);
    if (owner && static_cast<uid_t>(*owner) == caller_.uid) mine.push_back(std::move(c));
    if (static_cast<int>(mine.size()) >= limit) break;
  }
  return mine;
}

rpc::Capture RpcHandler::get_capture(int64_t capture_id) {
  check_capture_access(capture_id);
  return *core_.store().capture(capture_id);
}

rpc::KernelWindow RpcHandler::kernels_in_window(const rpc::KernelWindowRequest& request) {
  if (request.window.end_ns <= request.window.begin_ns)
    invalid("window end must be after its begin", "window");
  int limit = request.__isset.limit ? request.limit : 10000;
  if (limit <= 0 || limit > 1'000'000) invalid("limit must be in 1..1000000", "limit");
  check_capture_access(request.capture_id);
  // Reads see what is committed (the group committer commits continuously): no flush here, so a
  // read never waits for the agents' bulk rows.
  store::Reader reader(core_.store().path());
  // Only the names of the kernels returned, looked up one by one (a live host database's
  // StringIds holds every name ever seen: loading it all per call would dwarf the answer).
  store::Statement name_of = reader.database().prepare("SELECT value FROM StringIds WHERE id = ?");
  std::map<int64_t, std::string> names;
  auto name = [&](int64_t id) -> const std::string& {
    auto [it, fresh] = names.try_emplace(id);
    if (fresh) {
      name_of.bind(1, id);
      if (name_of.step()) it->second = name_of.column_text(0);
      name_of.reset();
    }
    return it->second;
  };
  store::EventFilter filter;
  filter.captureId = request.capture_id;
  filter.deviceId = request.device_id;
  if (request.__isset.stream_id) filter.streamId = request.stream_id;
  filter.window = {request.window.begin_ns, request.window.end_ns};
  rpc::KernelWindow out;
  out.truncated = false;
  size_t reply_bytes = 0;
  reader.for_each_kernel(filter, [&](const store::Kernel& k) {
    if (static_cast<int>(out.rows.size()) >= limit || reply_bytes > kMaxReplyBytes) {
      out.truncated = true;
      return;
    }
    // The kernel table's RPC view, generated from tables.py (rpc=): no field is mapped here.
    rpc::KernelRow row = rpc_views::rpc_view(k, name);
    reply_bytes += kRowOverheadBytes + rpc_views::text_bytes(row);
    out.rows.push_back(std::move(row));
  });
  return out;
}

std::vector<rpc::Finding> RpcHandler::findings(int64_t capture_id) {
  check_capture_access(capture_id);
  store::Reader reader(core_.store().path());
  std::vector<rpc::Finding> out;
  for (const auto& f : reader.findings(capture_id)) {
    rpc::Finding r;
    r.id = f.id;
    r.capture_id = f.captureId;
    r.rule = f.rule;
    r.severity = severity_of(f.severity);
    r.impact_ns = f.impact_ns;
    if (f.window_start && f.window_end) {
      rpc::TimeWindow w;
      w.begin_ns = *f.window_start;
      w.end_ns = *f.window_end;
      r.windows.push_back(w);
    }
    r.evidence_json = f.evidence_json;
    r.recommendation = f.recommendation;
    if (f.deviceId) r.__set_device_id(*f.deviceId);
    r.__set_created_ns(f.created_ns);
    out.push_back(std::move(r));
  }
  return out;
}

rpc::TraceStarted RpcHandler::start_trace(const rpc::TraceRequest& request) {
  if (request.__isset.pid == request.__isset.workflow_id)
    invalid("give exactly one of pid and workflow_id", "pid");
  WindowSpec window;
  if (request.__isset.duration_ms) window.duration_ms = request.duration_ms;
  if (request.__isset.iterations) window.iterations = request.iterations;
  if (request.__isset.pid) return core_.traces().start_for_pid(request.pid, window, caller_);
  // workflow_id is the host database's id: find its name.
  store::Reader reader(core_.store().path());
  for (const auto& w : reader.workflows())
    if (w.id == request.workflow_id)
      return core_.traces().start_for_workflow(w.name, window, caller_);
  not_found("no workflow " + std::to_string(request.workflow_id) + " in " + core_.store().path(),
            "workflow", request.workflow_id);
}

rpc::TraceStarted RpcHandler::start_trace_of_workflow(const rpc::TraceByName& request) {
  WindowSpec window;
  if (request.__isset.duration_ms) window.duration_ms = request.duration_ms;
  if (request.__isset.iterations) window.iterations = request.iterations;
  return core_.traces().start_for_workflow(request.workflow, window, caller_);
}

rpc::TraceProgress RpcHandler::trace_progress(int64_t capture_id, int32_t timeout_ms) {
  if (timeout_ms < 0 || timeout_ms > 60'000)
    invalid("timeout_ms must be in 0..60000", "timeout_ms");
  return core_.traces().progress(capture_id, timeout_ms, caller_);
}

rpc::DaemonStatus RpcHandler::status() {
  rpc::DaemonStatus s;
  s.version = version();
  s.started_ns = core_.started_ns();
  s.database_path = core_.store().path();
  for (const auto& agent : core_.registry().all())
    if (caller_.may_access(agent.uid)) s.agents.push_back(to_info(agent));
  for (const auto& d : core_.latest_devices()) {
    rpc::DeviceStatus ds;
    ds.index = d.index;
    ds.name = d.name;
    if (!d.uuid.empty()) ds.__set_uuid(d.uuid);
    if (d.gpu_utilization_pct) ds.__set_gpu_utilization_pct(*d.gpu_utilization_pct);
    if (d.memory_used_bytes) ds.__set_memory_used_bytes(*d.memory_used_bytes);
    if (d.memory_total_bytes) ds.__set_memory_total_bytes(*d.memory_total_bytes);
    if (d.power_watts) ds.__set_power_watts(*d.power_watts);
    if (d.sm_clock_mhz) ds.__set_sm_clock_mhz(*d.sm_clock_mhz);
    s.devices.push_back(ds);
  }
  s.open_windows = core_.traces().open_windows(caller_);
  s.device_sampling = core_.device_sampling();
  if (!core_.device_sampling()) s.__set_device_sampling_note(core_.device_sampling_note());
  s.caller_uid = static_cast<int32_t>(caller_.uid);
  return s;
}

std::vector<rpc::Job> RpcHandler::jobs() {
  std::map<std::string, rpc::Job> by_name;
  for (const auto& agent : core_.registry().all()) {
    if (!caller_.may_access(agent.uid)) continue;
    rpc::Job& job = by_name[agent.workflow];
    job.workflow = agent.workflow;
    if (std::find(job.uids.begin(), job.uids.end(), static_cast<int32_t>(agent.uid)) ==
        job.uids.end())
      job.uids.push_back(static_cast<int32_t>(agent.uid));
    job.agents.push_back(to_info(agent));
  }
  std::vector<rpc::Job> out;
  for (auto& [name, job] : by_name) {
    if (auto id = core_.store().find_workflow(name)) {
      job.__set_workflow_id(*id);
      for (int64_t capture : core_.store().captures_of_workflow(*id)) {
        auto owner = core_.store().capture_owner(capture);
        if (owner && caller_.may_access(static_cast<uid_t>(*owner)))
          job.capture_ids.push_back(capture);
      }
    }
    out.push_back(std::move(job));
  }
  return out;
}

bool RpcHandler::may_see_workflow(const std::string& workflow) {
  if (caller_.is_root()) return true;
  // A workflow belongs to the uid that registered it first (register_agent refuses any other
  // uid's process), so its rows are that uid's alone.
  if (auto owner = core_.store().workflow_owner(workflow)) return *owner == caller_.uid;
  // A workflow with no recorded owner (a database from before owners were recorded): the
  // caller's if one of its captures is the caller's.
  if (auto id = core_.store().find_workflow(workflow))
    for (int64_t capture : core_.store().captures_of_workflow(*id)) {
      auto owner = core_.store().capture_owner(capture);
      if (owner && static_cast<uid_t>(*owner) == caller_.uid) return true;
    }
  return false;
}

std::vector<rpc::WorkflowMetric> RpcHandler::metrics(const rpc::MetricsQuery& query) {
  int limit = query.__isset.limit ? query.limit : 1000;
  if (limit <= 0 || limit > 1'000'000) invalid("limit must be in 1..1000000", "limit");
  std::optional<std::string> workflow;
  if (query.__isset.workflow) {
    workflow = query.workflow;
    if (!may_see_workflow(query.workflow))
      denied("workflow '" + query.workflow + "' has no process or capture of uid " +
             std::to_string(caller_.uid));
  }
  auto rows = core_.store().workflow_metrics(
      workflow, query.__isset.since_ns ? std::optional<int64_t>(query.since_ns) : std::nullopt,
      caller_.is_root() || workflow ? limit : 1'000'000);
  std::vector<rpc::WorkflowMetric> out;
  std::map<std::string, bool> visible;
  size_t reply_bytes = 0;
  for (const auto& row : rows) {
    if (static_cast<int>(out.size()) >= limit || reply_bytes > kMaxReplyBytes) break;
    auto [it, fresh] = visible.try_emplace(row.workflow, false);
    if (fresh) it->second = may_see_workflow(row.workflow);
    if (!it->second) continue;
    rpc::WorkflowMetric m = to_rpc(row);
    reply_bytes += kRowOverheadBytes + m.workflow.size() + m.metric.size();
    out.push_back(std::move(m));
  }
  return out;
}

AgentLinkHandler::~AgentLinkHandler() {
  if (registered_id_ > 0) core_.agent_gone(registered_id_);
}

rpc::AgentHello validated_hello(const rpc::AgentHello& claimed) {
  rpc::AgentHello hello = claimed;
  hello.workflow = text::bounded_field(claimed.workflow, kMaxNameBytes);
  hello.workflow_source = text::bounded_field(claimed.workflow_source, kMaxNameBytes);
  if (claimed.__isset.command)
    hello.command = text::bounded_field(claimed.command, kMaxCommandBytes);
  if (claimed.__isset.hostname)
    hello.hostname = text::bounded_field(claimed.hostname, kMaxNameBytes);
  // A process tree deeper than this, or more devices, is not a real one.
  if (hello.parent_chain.size() > kMaxListEntries) hello.parent_chain.resize(kMaxListEntries);
  if (hello.devices.size() > kMaxListEntries) hello.devices.resize(kMaxListEntries);
  // Scheduler labels: known keys only (they become Prometheus label names), once each.
  hello.labels.clear();
  std::set<std::string> seen;
  for (const auto& label : claimed.labels) {
    const size_t eq = label.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = label.substr(0, eq);
    bool known = false;
    for (const char* allowed : kSchedulerLabelKeys) known = known || key == allowed;
    if (!known || !seen.insert(key).second) continue;
    hello.labels.push_back(key + "=" + text::bounded_field(label.substr(eq + 1), kMaxNameBytes));
  }
  hello.__isset.labels = !hello.labels.empty();
  return hello;
}

rpc::AgentWelcome AgentLinkHandler::register_agent(const rpc::AgentHello& claimed) {
  // An agent of another wire protocol writes records this daemon would decode wrongly: refuse it
  // at the door, saying which version it sent and which one is expected.
  const int32_t expected = rpc::g_fleetscope_constants.AGENT_PROTOCOL_VERSION;
  const int32_t sent = claimed.__isset.protocol_version ? claimed.protocol_version : 1;
  if (sent != expected) {
    invalid(
        "agent wire protocol " + std::to_string(sent) +
            (claimed.__isset.protocol_version ? "" : " (no protocol_version in its hello)") +
            " is not the one this fleetscoped speaks (" + std::to_string(expected) +
            ": the records of schema/tables.py); install the agent (libfleetscope_agent.so) of the "
            "same fleetscope release as the daemon",
        "protocol_version");
  }
  const rpc::AgentHello hello = validated_hello(claimed);
  if (registered_id_ > 0)
    invalid("this connection already registered agent " + std::to_string(registered_id_), "pid");
  if (!hello.workflow.empty()) {
    const uid_t owner = core_.store().claim_workflow(hello.workflow, caller_.uid, core_.now());
    if (owner != caller_.uid)
      invalid("workflow '" + hello.workflow + "' belongs to uid " + std::to_string(owner) +
                  " on this host; a process of uid " + std::to_string(caller_.uid) +
                  " cannot join it (set another FLEETSCOPE_WORKFLOW)",
              "workflow");
  }
  // The scheduler's identity as the kernel shows it to the daemon wins over the agent's word.
  rpc::AgentHello checked = hello;
  checked.labels = kernel_checked_labels(hello.labels,
                                         read_process_cgroup(caller_.pid, core_.config().proc_root),
                                         caller_.uid, uid_of_user_name);
  // The kubelet's pod names of the GPUs the driver shows the process on win over the ones its
  // downward-API environment declares (dcgm-exporter's join: by GPU UUID). No lock is held here.
  // A process with no CUDA context yet is not in the driver's list: tick() joins it later.
  if (kubelet::in_pod(checked.labels))
    if (const auto gpus = gpu_uuids_of_process(core_.latest_devices(), caller_.pid); !gpus.empty())
      checked.labels =
          kubelet::labels_with_kubelet_names(checked.labels, gpus, core_.kubelet_gpu_names());
  checked.__isset.labels = !checked.labels.empty();
  core_.store().remember_workflow_labels(checked.workflow, checked.labels);
  AgentEntry entry = core_.registry().add(checked, caller_, core_.now());
  registered_id_ = entry.id;
  rpc::AgentWelcome welcome;
  welcome.agent_id = entry.id;
  welcome.max_batch_rows = kMaxBatchRows;
  return welcome;
}

rpc::AgentOrder AgentLinkHandler::await_order(int64_t agent_id, int32_t timeout_ms) {
  if (agent_id != registered_id_)
    invalid("awaitOrder on a connection that did not register agent " + std::to_string(agent_id),
            "agent_id");
  if (timeout_ms < 0 || timeout_ms > 60'000)
    invalid("timeout_ms must be in 0..60000", "timeout_ms");
  return core_.registry().await(agent_id, std::chrono::milliseconds(timeout_ms));
}

int64_t AgentLinkHandler::push_records(int64_t agent_id, rpc::RecordBatch&& batch) {
  if (row_count(batch) > static_cast<size_t>(kMaxBatchRows))
    invalid("batch of " + std::to_string(row_count(batch)) + " rows exceeds " +
                std::to_string(kMaxBatchRows),
            "batch");
  return core_.traces().on_batch(agent_id, std::move(batch), caller_);
}

void AgentLinkHandler::window_closed(int64_t agent_id, const rpc::WindowClosed& closed) {
  core_.traces().on_closed(agent_id, closed, caller_);
}

}  // namespace fleetscope::daemon
