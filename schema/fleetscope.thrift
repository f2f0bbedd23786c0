// fleetscope daemon RPC API, version 1.
//
// Served by `fleetscoped` on a Unix socket (and optionally 127.0.0.1); the CLI (`fleetscope trace`,
// `fleetscope status`) and the GUI are its clients. Times are nanoseconds on the CLOCK_REALTIME
// base of the trace store (schema/trace.sql); rows mirror the store's tables and keep their names.
//
// Evolution rules: never renumber or retype a field; add new fields as optional with a new id;
// bump API_VERSION when a call or field is added, so clients can check `version()` first.

namespace cpp fleetscope.rpc

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

// One kernel execution (CUPTI_ACTIVITY_KIND_KERNEL row, names resolved).
struct KernelRow {
  1: required i64 start_ns,
  2: required i64 end_ns,
  3: required i32 device_id,
  4: required i32 stream_id,
  5: optional i64 correlation_id,
  6: optional i64 global_pid,
  7: required string name,        // demangled name
  8: optional string short_name,
  9: optional list<i32> grid,     // x, y, z
  10: optional list<i32> block,   // x, y, z
  11: optional i32 registers_per_thread,
  12: optional i32 shared_memory_bytes,  // static + dynamic, per block
}

struct KernelWindow {
  1: required list<KernelRow> rows,
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
