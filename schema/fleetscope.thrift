// fleetscope daemon RPC API, version 1.
//
// Served by `fleetscoped` on a Unix socket (and optionally 127.0.0.1); the CLI (`fleetscope trace`,
// `fleetscope status`) and the GUI are its clients. Times are nanoseconds on the CLOCK_REALTIME
// base of the trace store (schema/tables.py); rows mirror the store's tables and keep their names.
//
// Evolution rules: never renumber or retype a field; add new fields as optional with a new id;
// bump API_VERSION when a call or field is added, so clients can check `version()` first.

namespace cpp fleetscope.rpc

include "records.thrift"  // generated at build time from schema/tables.py

const i32 API_VERSION = 1

// --- errors -------------------------------------------------------------------------------------

// The request is malformed or asks for something impossible (bad window, both pid and workflow...).
exception InvalidRequest {
  1: required string message,
  2: optional string field,  // name of the offending request field, when one is to blame
}

// A capture, workflow, process or device named in the request does not exist.
exception NotFound {
  1: required string message,
  2: optional string kind,  // 'capture', 'workflow', 'process', 'device', 'trace'
  3: optional i64 id,
}

// The caller (identified by SO_PEERCRED on the Unix socket) may not do this, e.g. trace another
// user's process.
exception PermissionDenied {
  1: required string message,
}

// --- shared structs -----------------------------------------------------------------------------

struct VersionInfo {
  1: required i32 api_version,        // API_VERSION of the daemon
  2: required string daemon_version,  // fleetscope release, e.g. "0.1.0"
  3: required i32 schema_version,     // trace store schema_version of the host database
  4: optional string hostname,
}

// captures.kind
enum CaptureKind {
  CONTINUOUS = 0,
  ON_DEMAND = 1,
  IMPORTED = 2,
  STANDALONE = 3,
}

// One tracing window (a row of the `captures` table).
struct Capture {
  1: required i64 id,
  2: required CaptureKind kind,
  3: required string source,               // 'fleetscope-agent', 'kineto-json', 'nsys-sqlite', ...
  4: optional string source_path,          // imported file or traced command
  5: optional i64 start_ns,
  6: optional i64 end_ns,
  7: required i64 dropped_records = 0,     // activity records CUPTI or the agent dropped
  8: required i64 collector_overhead_ns = 0,
  9: optional string gpu_vendor,           // 'nvidia', 'amd'
  10: optional string note,
}

struct CaptureFilter {
  1: optional i64 since_ns,       // captures ending at or after this time
  2: optional i64 workflow_id,
  3: optional i32 limit = 100,
}

// A half-open window [begin_ns, end_ns).
struct TimeWindow {
  1: required i64 begin_ns,
  2: required i64 end_ns,
}

// Request for the kernels that overlap a window on one device (optionally one stream).
struct KernelWindowRequest {
  1: required i64 capture_id,
  2: required TimeWindow window,
  3: required i32 device_id,
  4: optional i32 stream_id,   // unset = every stream of the device
  5: optional i32 limit = 10000,
}

// One kernel execution: records.KernelRow, the kernel table's RPC view, is generated from the
// columns schema/tables.py marks rpc= (their field ids stay as version 1 numbered them).
struct KernelWindow {
  1: required list<records.KernelRow> rows,
  2: required bool truncated,  // true when more rows matched than `limit`
}

// finding.severity
enum Severity {
  INFO = 0,
  LOW = 1,
  MEDIUM = 2,
  HIGH = 3,
  CRITICAL = 4,
}

// An analyzer finding (a row of the `findings` table).
struct Finding {
  1: required i64 id,
  2: required i64 capture_id,
  3: required string rule,             // rule id, e.g. 'launch_bound_small_kernels'
  4: required Severity severity,
  5: required i64 impact_ns,           // estimated GPU time recoverable
  6: required list<TimeWindow> windows,
  7: required string evidence_json,    // top offenders with counts, thresholds used
  8: required string recommendation,
  9: optional i32 device_id,           // unset = capture-wide
  10: optional i64 created_ns,
}

// What to trace on demand (like `dyno gputrace`): exactly one of pid / workflow_id, and exactly one
// of duration_ms / iterations.
struct TraceRequest {
  1: optional i32 pid,
  2: optional i64 workflow_id,
  3: optional i32 duration_ms,
  4: optional i32 iterations,
  5: optional string log_file,   // where to also write a Chrome trace, when wanted
}

struct TraceStarted {
  1: required i64 capture_id,     // the capture the trace will fill
  2: required list<i32> pids,     // agents that accepted the request
  3: required i64 start_ns,
}

// --- the service --------------------------------------------------------------------------------

service FleetscopeDaemon {
  VersionInfo version(),

  list<Capture> listCaptures(1: CaptureFilter filter)
      throws (1: InvalidRequest invalid, 2: PermissionDenied denied),

  Capture getCapture(1: i64 capture_id)
      throws (1: NotFound not_found, 2: PermissionDenied denied),

  KernelWindow kernelsInWindow(1: KernelWindowRequest request)
      throws (1: InvalidRequest invalid, 2: NotFound not_found, 3: PermissionDenied denied),

  list<Finding> findings(1: i64 capture_id)
      throws (1: NotFound not_found, 2: PermissionDenied denied),

  TraceStarted startTrace(1: TraceRequest request)
      throws (1: InvalidRequest invalid, 2: NotFound not_found, 3: PermissionDenied denied),
}

// ================================================================================================
// API version 2 additions: host status, jobs, metrics, trace progress (the `fleetscope status |
// jobs | metrics | trace` commands) and the agent link. Everything above is unchanged.
// ================================================================================================

const i32 API_VERSION_2 = 2

// A registered agent (one traced-able process on the host).
struct AgentInfo {
  1: required i64 agent_id,
  2: required i32 pid,
  3: required i32 uid,
  4: required string workflow,          // workflow name (see AgentHello.workflow)
  5: required string workflow_source,   // 'env', 'slurm', 'kubernetes', 'command'
  6: optional string command,
  7: required list<i32> parent_chain,   // parent pid, grandparent pid, ... up to (excluding) pid 1
  8: required list<i32> devices,        // CUDA device ordinals the process may use
  9: required i64 registered_ns,
  10: optional i64 open_capture_id,     // the window currently open in this process, if any
  11: optional list<string> labels,     // scheduler identity (AgentHello.labels), as kept
}

// One GPU as the daemon's device sampler sees it.
struct DeviceStatus {
  1: required i32 index,
  2: required string name,
  3: optional string uuid,
  4: optional double gpu_utilization_pct,
  5: optional i64 memory_used_bytes,
  6: optional i64 memory_total_bytes,
  7: optional double power_watts,
  8: optional i64 sm_clock_mhz,
}

struct OpenWindow {
  1: required i64 capture_id,
  2: required list<i32> pids,
  3: required i64 start_ns,
  4: optional i64 deadline_ns,
}

struct DaemonStatus {
  1: required VersionInfo version,
  2: required i64 started_ns,
  3: required string database_path,
  4: required list<AgentInfo> agents,          // only the caller's own unless the caller is root
  5: required list<DeviceStatus> devices,
  6: required list<OpenWindow> open_windows,   // only the caller's own unless the caller is root
  7: required bool device_sampling,            // false when NVML could not be loaded
  8: optional string device_sampling_note,     // why sampling is off
  9: required i32 caller_uid,
}

// A job as the daemon knows it: its agents now, and the captures it has.
struct Job {
  1: required string workflow,
  2: optional i64 workflow_id,                 // id in the host database once anything was stored
  3: required list<i32> uids,
  4: required list<AgentInfo> agents,
  5: required list<i64> capture_ids,
}

// One row of workflow_metrics.
struct WorkflowMetric {
  1: required string workflow,
  2: required i32 device,
  3: required i64 window_start_ns,
  4: required i64 window_end_ns,
  5: required string metric,                   // 'gpu_seconds', 'busy_fraction', 'memory_peak_bytes'
  6: required double value,
}

struct MetricsQuery {
  1: optional string workflow,                 // unset = every workflow the caller may see
  2: optional i64 since_ns,
  3: optional i32 limit = 1000,
}

// Where a trace window stands; `done` once every agent of the window has closed it (or vanished).
struct TraceProgress {
  1: required i64 capture_id,
  2: required bool done,
  3: required list<i32> pids,
  4: required i64 records,                     // rows committed so far
  5: required i64 dropped_records,
  6: optional string note,                     // e.g. 'pid 12 left mid-window', CUPTI busy
  7: optional i64 kernels,                     // filled when done
  8: optional double gpu_busy_pct,             // union of kernels+copies over the window span
  9: optional string top_finding,              // rule: recommendation of the largest finding
  10: required string database_path,
  11: optional string refused,                 // every agent refused the window: their reasons
}

// TraceRequest by workflow name (TraceRequest.workflow_id is the database id).
struct TraceByName {
  1: required string workflow,
  2: optional i32 duration_ms,
  3: optional i32 iterations,
}

// ================================================================================================
// API version 3 additions: the sharing service (issue 13). A job asks for a memory lane on one GPU
// (`fleetscope run --share`), the daemon answers with the lane or "queued"; plans from `fleetscope
// share plan` are applied by hand or automatically; everything decided is written to lane_plans
// and sharing_events. Everything above is unchanged.
// ================================================================================================

const i32 API_VERSION_3 = 3

enum LaneState {
  GRANTED = 0,    // the job runs in the lane described
  QUEUED = 1,     // no GPU has room now; ask again with awaitLane(request_id)
  UNSHARED = 2,   // sharing is off, or no active plan names the workflow (planned_only): run alone
}

struct LaneRequest {
  1: required i32 pid,                  // the process whose exit frees the lane (0: the caller)
  2: required string workflow,
  3: optional i64 persistent_bytes,     // P; unset: the active plan's figure for the workflow
  4: optional i64 ephemeral_bytes,      // T; unset: the plan's
  5: optional string gpu,               // hint: a GPU UUID or index
  6: optional bool planned_only = false,  // a lane only when an active plan names the workflow
  7: optional i32 priority = 0,         // PRIORITY turn policy: higher goes first
}

struct LaneGrant {
  1: required LaneState state,
  2: optional i64 request_id,           // QUEUED: the handle for awaitLane
  3: optional string gpu_uuid,
  4: optional i32 gpu_index,
  5: optional string lane_id,           // FLEETSCOPE_LANE_ID
  6: optional i64 lane_bytes,           // the lane's memory cap (FLEETSCOPE_LANE_BYTES)
  7: optional string policy,            // the lane's turn policy (fifo, srtf, priority)
  8: optional string gate_socket,       // the daemon's iteration-gate socket
  9: optional string ledger_directory,  // where the lane's shared-memory ledger lives
  10: optional i64 plan_id,             // the plan that placed the job, if one did
  11: optional string reason,           // why QUEUED or UNSHARED
  12: optional string lane_token,       // FLEETSCOPE_LANE_TOKEN: joining the lane needs it
}

struct SharedJob {
  1: required i32 pid,
  2: required i32 uid,
  3: required string workflow,
  4: required i64 persistent_bytes,
  5: required i64 ephemeral_bytes,
  6: required i64 granted_ns,
  7: optional i64 plan_id,
  8: optional double measured_slowdown,  // iteration time in the lane / planned solo time
  9: optional i64 iterations_seen,
  10: optional i64 denied_allocations,  // allocations its lane refused (lane out of memory)
}

struct SharedLane {
  1: required i32 gpu_index,
  2: required string gpu_uuid,
  3: required string lane_id,
  4: required i64 offset_bytes,
  5: required i64 capacity_bytes,
  6: required string policy,
  7: required list<SharedJob> jobs,
  8: optional i64 used_bytes,           // from the lane's ledger: bytes its jobs hold now
  9: optional i64 peak_used_bytes,      // the most they held at once since the lane was made
  10: optional i64 denied_allocations,  // allocations the lane refused, all its jobs together
}

struct SharedGpu {
  1: required i32 index,
  2: required string uuid,
  3: required i64 capacity_bytes,
  4: required i64 free_bytes,
}

// A row of lane_plans with the daemon's view of it.
struct PlanInfo {
  1: required i64 plan_id,
  2: required i64 created_ns,
  3: required string policy,
  4: required bool active,              // still applied to new and restarted jobs
  5: required bool automatic,
  6: optional double max_slowdown,
  7: required list<string> workflows,
  8: optional string withdrawn_reason,
}

// A row of sharing_events.
struct SharingEvent {
  1: required i64 ts_ns,
  2: optional i64 plan_id,
  3: required string kind,
  4: required string detail_json,
}

struct ShareStatus {
  1: required bool enabled,             // false after sharingOff until the next applyPlan
  2: required bool automatic,
  3: optional double max_slowdown,
  4: required list<SharedGpu> gpus,
  5: required list<SharedLane> lanes,   // a non-root caller sees only its own jobs in them
  6: required list<SharedJob> queued,
  7: required list<PlanInfo> plans,
  8: required list<SharingEvent> events,  // the latest, newest last
  9: optional string gate_socket,
  10: optional list<string> stray_ledgers,  // lane ledger files no lane of this daemon owns
}

struct ApplyPlanRequest {
  1: required string plan_json,         // the JSON `fleetscope share plan --format json` writes
  2: optional bool automatic = false,   // keep applying it and withdraw it when too slow
  3: optional double max_slowdown,      // automatic: measured slowdown that withdraws the plan
  4: optional string policy,            // turn policy of its lanes; unset: the plan's own
                                        // turn_policy (fifo when the plan names none); a set
                                        // one other than the plan's is refused
                                        // (daemon/src/sharing_host.cpp apply_plan)
}

struct PlanApplied {
  1: required i64 plan_id,
  2: required list<string> workflows,   // workflows whose new and restarted jobs it places
  3: optional i64 superseded_plan_id,   // the plan it replaced, if one was active
}

service FleetscopeHost extends FleetscopeDaemon {
  DaemonStatus status(),
  list<Job> jobs(),
  list<WorkflowMetric> metrics(1: MetricsQuery query)
      throws (1: InvalidRequest invalid, 2: PermissionDenied denied),
  TraceStarted startTraceOfWorkflow(1: TraceByName request)
      throws (1: InvalidRequest invalid, 2: NotFound not_found, 3: PermissionDenied denied),
  // Waits up to timeout_ms for the window to finish, then reports where it stands.
  TraceProgress traceProgress(1: i64 capture_id, 2: i32 timeout_ms)
      throws (1: NotFound not_found, 2: PermissionDenied denied),
  // --- API version 3: the sharing service ---
  LaneGrant requestLane(1: LaneRequest request)
      throws (1: InvalidRequest invalid, 2: PermissionDenied denied),
  // Waits up to timeout_ms for a QUEUED request to be granted; answers its state then.
  LaneGrant awaitLane(1: i64 request_id, 2: i32 timeout_ms)
      throws (1: InvalidRequest invalid, 2: NotFound not_found, 3: PermissionDenied denied),
  void releaseLane(1: i32 pid) throws (1: NotFound not_found, 2: PermissionDenied denied),
  ShareStatus shareStatus(),
  PlanApplied applyPlan(1: ApplyPlanRequest request)
      throws (1: InvalidRequest invalid, 2: PermissionDenied denied),
  void sharingOff() throws (1: PermissionDenied denied),
  void setAutomatic(1: bool on, 2: double max_slowdown)
      throws (1: InvalidRequest invalid, 2: PermissionDenied denied),
  // Sharing back on after sharingOff (the active plan, if any, applies again).
  void sharingOn() throws (1: PermissionDenied denied),
  // Removes the stray lane ledgers (ShareStatus.stray_ledgers); answers the paths removed.
  list<string> removeStrayLedgers() throws (1: PermissionDenied denied),
}

// --- the agent link -----------------------------------------------------------------------------
// Each process that loads the agent connects to the daemon's agent socket (framed binary protocol,
// the same limits as the API socket), registers, and then long-polls for window orders. The agent
// never blocks the job: all of this runs on its own control thread. The caller's pid and uid come
// from SO_PEERCRED; the daemon does not trust the ones a hello carries.

struct AgentHello {
  1: required i32 pid,
  2: required list<i32> parent_chain,
  3: required list<i32> devices,
  4: required string workflow,
  5: required string workflow_source,   // 'env', 'slurm', 'kubernetes', 'command'
  6: optional string command,
  7: optional string hostname,
  // The agent's wire protocol: 2 sends the records of schema/tables.py (schema 4). Absent: 1,
  // the hand-numbered records before the generated ones; the daemon refuses any other version
  // than AGENT_PROTOCOL_VERSION with a message naming both (an old agent cannot be decoded).
  8: optional i32 protocol_version,
  // The scheduler's identity, "key=value" (process_facts.h scheduler_labels): slurm_job_id,
  // slurm_job_user, slurm_array_job_id, slurm_array_task_id, k8s_pod_uid, k8s_container_id,
  // k8s_namespace, k8s_pod. Other keys are dropped by the daemon.
  9: optional list<string> labels,
}

const i32 AGENT_PROTOCOL_VERSION = 2

struct AgentWelcome {
  1: required i64 agent_id,
  2: required i32 max_batch_rows,       // the agent splits record batches to stay below this
}

// What the agent's control thread is told to do next.
enum AgentOrderKind {
  NOTHING = 0,        // the poll timed out; ask again
  OPEN_WINDOW = 1,
  CLOSE_WINDOW = 2,   // close the open window now (the CLI's --duration-ms elapsed, or a stop)
}

struct AgentOrder {
  1: required AgentOrderKind kind,
  2: optional i64 capture_id,
  3: optional i32 duration_ms,
  4: optional i32 iterations,
}

// Rows of one window: RecordBatch and its *Record structs are generated from the table
// descriptions (schema/tables.py -> records.thrift, included above), so the wire's field ids and
// the store's columns are described in one place.

struct WindowClosed {
  1: required i64 capture_id,
  2: required i64 dropped_records,
  3: required i64 collector_overhead_ns,
  4: optional string error,             // why the window could not be traced (e.g. CUPTI busy)
  5: optional i64 start_ns,
  6: optional i64 end_ns,
}

service FleetscopeAgentLink {
  AgentWelcome registerAgent(1: AgentHello hello) throws (1: InvalidRequest invalid),
  AgentOrder awaitOrder(1: i64 agent_id, 2: i32 timeout_ms) throws (1: InvalidRequest invalid),
  // Returns once the batch is taken (decoded and queued for the host database; at most a few
  // batches per agent wait uncommitted, beyond that the call waits). The answer is the highest
  // sequence of this agent's window whose batches are all committed (-1: none yet): acknowledged
  // durability. A killed agent loses nothing the daemon took.
  i64 pushRecords(1: i64 agent_id, 2: records.RecordBatch batch) throws (1: InvalidRequest invalid),
  // Returns after every batch of the agent's window is committed.
  void windowClosed(1: i64 agent_id, 2: WindowClosed closed) throws (1: InvalidRequest invalid),
}
