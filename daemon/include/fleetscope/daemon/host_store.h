// The daemon's host database (WAL): the bulk store::Writer, which only ever takes the agents'
// event rows and device samples (its thread inserts them; flush() waits for its queue), a catalog
// store::Writer on its own connection for the few synchronous rows (captures, workflows,
// processes, findings: one short transaction each, never behind the bulk queue), a maintenance
// connection for the daemon's own tables (workflow_metrics, owners, sharing records), a
// connection of its own for each retention run, and short-lived read-only connections for
// queries. Batches from agents are appended to the bulk writer as they arrive and made durable by
// the trace control's group committer (group_committer.h): what the daemon took is committed even
// when the agent is killed, and its acknowledgements tell the agent which sequence is committed.
// No call here that an RPC makes waits for the bulk queue: reads see what is committed.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/daemon/write_turns.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/writer.h"
#include "fleetscope_types.h"

namespace fleetscope::analyzer {
struct CaptureData;
}  // namespace fleetscope::analyzer

namespace fleetscope::daemon {

struct CaptureSummary {
  int64_t kernels = 0;
  std::optional<double> gpu_busy_pct;      // GPU utilization (analyzer/gpu_utilization.h), %
  std::optional<std::string> top_finding;  // "rule: recommendation"
};

// A workflow_metrics row (store::WorkflowMetric, schema/tables.py) with its workflow by name: the
// aggregator and the analyzer know workflows by name, the table by id (HostStore fills
// row.workflow_id when it stores the row, and `workflow` when it reads one back).
struct WorkflowMetricRow {
  std::string workflow;
  store::WorkflowMetric row;
};
// The RPC's view of a row (metrics()).
rpc::WorkflowMetric to_rpc(const WorkflowMetricRow& metric);

class HostStore {
 public:
  // Opens (migrating) or creates the database at `path`.
  explicit HostStore(const std::string& path, const std::string& hostname);
  ~HostStore();  // close()
  HostStore(const HostStore&) = delete;
  HostStore& operator=(const HostStore&) = delete;

  const std::string& path() const { return path_; }
  // The indexes a host database keeps live while it is written (schema/indexes.sql's per-capture
  // ones of tables without row ranges: none on the event tables, whose captures' rows are found
  // by capture_row_ranges); the others are dropped. For the benchmark's reference insert loop too.
  static void apply_live_indexes(store::Database& db);
  int schema_version() const;
  int64_t host_id() const { return host_id_; }

  // The workflows row of `name`, created on first use.
  int64_t workflow_id(const std::string& name, const std::optional<std::string>& user);
  std::optional<int64_t> find_workflow(const std::string& name);
  // The owner of workflow `name`: its first claimant (now `uid` when it had none, recorded in
  // the daemon's own table so it holds across restarts).
  uid_t claim_workflow(const std::string& name, uid_t uid, int64_t now_ns);
  std::optional<uid_t> workflow_owner(const std::string& name);
  // The scheduler labels ("key=value") the workflows row of `name` gets in its labels column
  // (JSON) when it is created: the first agent's, or `replace`d ones (the kubelet's names).
  void remember_workflow_labels(const std::string& name, const std::vector<std::string>& labels,
                                bool replace = false);
  // The process row of `pid` in capture `capture_id` (a process is per capture: pids repeat).
  void upsert_process(int64_t capture_id, int pid, int64_t workflow_id, const std::string& command,
                      int64_t start_ns);

  int64_t open_capture(const std::string& source_path, int64_t start_ns);
  // Queues the rows of one batch (consuming it) as one transaction of the bulk writer, and
  // writes its GPU descriptions through the catalog writer. wait_committed(ticket) returns once
  // the rows are committed (a later flush() too).
  struct QueuedBatch {
    size_t rows = 0;
    uint64_t ticket = 0;
  };
  QueuedBatch add_batch(rpc::RecordBatch&& batch, int64_t capture_id);
  void wait_committed(uint64_t ticket);
  // Rows of one batch, committed before returning. Returns the rows written.
  size_t commit_batch(rpc::RecordBatch batch, int64_t capture_id);
  void close_capture(int64_t capture_id, int64_t end_ns, int64_t dropped, int64_t overhead_ns,
                     const std::optional<std::string>& note);
  // Windows a previous run of the daemon opened and never closed (it was killed or crashed
  // mid-window): their id, owner and the time of their last committed row (the start when none).
  struct InterruptedCapture {
    int64_t id = 0;
    int64_t start_ns = 0;
    int64_t last_row_ns = 0;
    std::optional<int64_t> uid;
  };
  std::vector<InterruptedCapture> interrupted_captures();
  // Runs the analyzer on a finished capture, stores its findings, and summarizes it.
  CaptureSummary analyze(int64_t capture_id);

  void add_device_samples(std::vector<store::DeviceSample> samples);
  void add_workflow_metrics(const std::vector<WorkflowMetricRow>& rows);
  // The step-time tail rows analyze() adds for each workflow of a closed window: steps,
  // step_time_p50_ns, step_time_p90_ns, step_time_p99_ns, step_time_jitter (deviceId -1).
  static std::vector<WorkflowMetricRow> step_tail_rows(const analyzer::CaptureData& data);
  std::vector<WorkflowMetricRow> workflow_metrics(const std::optional<std::string>& workflow,
                                                  std::optional<int64_t> since_ns, int limit);

  std::vector<rpc::Capture> captures(std::optional<int64_t> workflow_id,
                                     std::optional<int64_t> since_ns, int limit);
  std::optional<rpc::Capture> capture(int64_t capture_id);
  // Per workflow: its captures in this database and its stored finding of the largest impact
  // (for the Prometheus page: `fleetscope fleet --prometheus` fills CAPTURES and TOP FINDING).
  struct WorkflowCaptures {
    int64_t captures = 0;
    std::string top_rule;  // empty: no finding stored
    int64_t top_impact_ns = 0;
  };
  std::map<std::string, WorkflowCaptures> workflow_captures();
  // Per workflow: the step-time tail of its latest analysed window (the step_tail_rows that
  // analyze() stored with the largest window_end), for the Prometheus page.
  struct StepTail {
    int64_t steps = 0;
    double p50_ns = 0, p90_ns = 0, p99_ns = 0, jitter = 0;
    int64_t window_end_ns = 0;
  };
  std::map<std::string, StepTail> workflow_step_tails();
  // Captures linked to a workflow through the processes of its agents' windows.
  std::vector<int64_t> captures_of_workflow(int64_t workflow_id);
  // Owner uid recorded for a capture (the uid of the process traced), if any.
  std::optional<int64_t> capture_owner(int64_t capture_id);
  void set_capture_owner(int64_t capture_id, int64_t uid, int64_t workflow_id);

  // Retention: drops whole captures, oldest first, and downsamples then drops device samples.
  struct RetentionPolicy {
    int64_t max_bytes = 0;            // 0 = unbounded
    int64_t max_age_ns = 0;           // 0 = unbounded
    int64_t downsample_after_ns = 0;  // device samples older than this become 1-minute means
    int64_t downsample_bucket_ns = 60'000'000'000;
  };
  struct RetentionResult {
    int64_t captures_dropped = 0;
    int64_t samples_downsampled = 0;
    int64_t samples_dropped = 0;
  };
  RetentionResult apply_retention(const RetentionPolicy& policy, int64_t now_ns);
  int64_t size_bytes();

  // The sharing service's records (host_store_sharing.cpp): what was planned (lane_plans) and
  // what was done (sharing_events), written here so the daemon stays the single writer. The rows
  // are the tables' generated structs (schema/tables.py).
  using LanePlanRow = store::LanePlan;
  using SharingEventRow = store::SharingEvent;
  int64_t add_lane_plan(int64_t created_ns, const std::string& policy,
                        const std::string& plan_json);
  void add_sharing_events(const std::vector<SharingEventRow>& rows);
  std::vector<LanePlanRow> lane_plans(int limit);          // newest first
  std::vector<SharingEventRow> sharing_events(int limit);  // the latest, oldest first
  // Every event of the given kinds, oldest first (the restart replay, sharing_restore.h).
  std::vector<SharingEventRow> sharing_events_of_kinds(const std::vector<std::string>& kinds);
  std::optional<LanePlanRow> lane_plan(int64_t id);

  void flush();  // commits every row appended so far
  void close();  // flush, checkpoint, close (the file stays in WAL mode for readers)

  // Test seam: called each time the maintenance connection is taken, with its lock held, before
  // its statements run (a test holds a metrics transaction there to show what does not wait).
  void set_maintenance_probe(std::function<void()> probe);

 private:
  std::string path_;
  // Declared before the connections: their hooks use it until they are closed.
  std::unique_ptr<WriteTurns> turns_;  // the short writers go between bulk transactions
  std::unique_ptr<WriteTurns::ShortWriter> catalog_turns_, maintenance_turns_;
  std::unique_ptr<store::Writer> writer_;   // bulk: event rows, device samples
  std::unique_ptr<store::Writer> catalog_;  // synchronous catalog rows
  std::mutex workflows_mutex_;              // guards workflows_ (no I/O under it)
  std::mutex creating_mutex_;               // one workflow row created at a time
  // Guards workflow_owners_ and workflow_labels_, held only for the map access (no I/O under it):
  // a lookup on the window-opening path never waits for a maintenance transaction.
  std::mutex maps_mutex_;
  std::map<std::string, int64_t> workflows_;
  std::map<std::string, uid_t> workflow_owners_;
  std::map<std::string, std::string> workflow_labels_;  // name -> labels JSON, for creation
  // Guards maintenance_ (the daemon's own tables: one statement or transaction at a time) and
  // maintenance_probe_. Taken after maps_mutex_ is released, never the other way round.
  std::mutex maintenance_mutex_;
  std::unique_ptr<store::Database> maintenance_;
  std::function<void()> maintenance_probe_;
  // maintenance_, locked, after the test probe ran.
  struct Maintenance {
    std::unique_lock<std::mutex> lock;
    store::Database& db;
  };
  Maintenance maintenance();
  int64_t host_id_ = 0;
};

}  // namespace fleetscope::daemon
