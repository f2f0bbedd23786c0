#include "fleetscope/daemon/host_store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/analysis_cache.h"
#include "fleetscope/analyzer/attribution.h"
#include "fleetscope/analyzer/gpu_utilization.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/daemon/batch_decoder.h"
#include "fleetscope/store/capture_rows.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/table_io.h"
#include "immediate_transaction.h"

namespace fleetscope::daemon {
namespace {

bool exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

// The daemon's own table: which uid and workflow a capture was taken for. Kept beside the store's
// tables (not in schema/tables.py) because only the host database needs it for its per-user rules.
constexpr const char* kOwnerTable =
    "CREATE TABLE IF NOT EXISTS daemon_capture_owner ("
    " captureId INTEGER PRIMARY KEY NOT NULL,"  // the capture
    " uid INTEGER NOT NULL,"                    // uid of the traced processes
    " workflow_id INTEGER)";                    // workflow the window was opened for

// Who a workflow name belongs to on this host: the uid whose process registered it first. No
// other uid's process can join it, so a name cannot be borrowed to read another user's rows.
constexpr const char* kWorkflowOwnerTable =
    "CREATE TABLE IF NOT EXISTS daemon_workflow_owner ("
    " name TEXT PRIMARY KEY NOT NULL,"  // the workflow name agents declare
    " uid INTEGER NOT NULL,"            // uid of the first process that registered it
    " claimed_ns INTEGER NOT NULL)";    // when

rpc::Capture to_rpc(const store::Capture& c) {
  rpc::Capture out;
  out.id = c.id;
  out.kind = static_cast<rpc::CaptureKind::type>(static_cast<int>(c.kind));
  out.source = c.source;
  if (!c.source_path.empty()) out.__set_source_path(c.source_path);
  if (c.start_ns) out.__set_start_ns(*c.start_ns);
  if (c.end_ns) out.__set_end_ns(*c.end_ns);
  out.dropped_records = c.dropped_records;
  out.collector_overhead_ns = c.collector_overhead_ns;
  if (c.gpu_vendor) out.__set_gpu_vendor(*c.gpu_vendor);
  if (c.note) out.__set_note(*c.note);
  return out;
}

}  // namespace

rpc::WorkflowMetric to_rpc(const WorkflowMetricRow& metric) {
  rpc::WorkflowMetric m;
  m.workflow = metric.workflow;
  m.device = metric.row.deviceId;
  m.window_start_ns = metric.row.window_start;
  m.window_end_ns = metric.row.window_end;
  m.metric = metric.row.metric;
  m.value = metric.row.value;
  return m;
}

// The host database is written while it is read, so the indexes it keeps are kept up to date row
// by row (a one-shot file gets its full set from Writer::finish after the load instead). None on
// the event tables: a capture's rows there are found by the rowid ranges the writer records
// (capture_row_ranges, store/capture_rows.h), so closing a window analyses its own rows without a
// per-capture index, and the bulk writer does not pay an index insert per row (1.15-1.20 -> about
// 0.85 us of CPU per row: docs/benchmarks.md). Kept: schema/indexes.sql's per-capture indexes
// ((captureId) or (captureId, one more column)) of the other tables (findings). A file from an
// older daemon loses the rest (its live per-capture indexes, or the full set its shutdown built).
void HostStore::apply_live_indexes(store::Database& db) {
  std::istringstream lines(store::index_sql());
  std::string line;
  const std::string create = "CREATE INDEX IF NOT EXISTS ";
  while (std::getline(lines, line)) {
    if (line.rfind(create, 0) != 0) continue;
    const size_t name_end = line.find(' ', create.size());
    const size_t on = line.find(" ON ", name_end);
    const size_t open = line.find('(');
    const size_t close = line.find(')', open);
    if (name_end == std::string::npos || on == std::string::npos || open == std::string::npos ||
        close == std::string::npos)
      continue;
    const std::string name = line.substr(create.size(), name_end - create.size());
    const std::string table = line.substr(on + 4, open - on - 4);
    const std::string columns = line.substr(open + 1, close - open - 1);
    const bool per_capture =
        columns.rfind("captureId", 0) == 0 && std::count(columns.begin(), columns.end(), ',') <= 1;
    const bool keep = per_capture && !store::has_row_ranges(table);
    db.exec(keep ? line : "DROP INDEX IF EXISTS " + name);
  }
}

HostStore::HostStore(const std::string& path, const std::string& hostname) : path_(path) {
  store::Database db = exists(path) ? store::Database::open(path, store::OpenMode::read_write)
                                    : store::Database::create(path);
  // The host database is read while the daemon writes (fleetscope analyze/report/fleet, the
  // GUI): WAL, also for a file an older build or a crash left in rollback-journal mode.
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec(kOwnerTable);
  db.exec(kWorkflowOwnerTable);
  apply_live_indexes(db);
  turns_ = std::make_unique<WriteTurns>(path);
  turns_->install_bulk(db.raw());
  store::WriterOptions options;
  options.writer_name = "fleetscoped";
  options.keep_wal_after_finish = true;
  options.batch_rows = 16384;
  options.build_indexes = false;  // apply_live_indexes, not the one-shot file's full set
  // A catalog or maintenance write waits for a few hundred of the batch's rows, not all of them.
  options.commit_early = [turns = turns_.get()] { return turns->short_writer_wants_turn(); };
  writer_ = std::make_unique<store::Writer>(std::move(db), options);
  store::WriterOptions catalog_options;
  catalog_options.writer_name = "fleetscoped-catalog";
  catalog_options.keep_wal_after_finish = true;
  catalog_options.build_indexes = false;
  catalog_options.batch_rows = 64;
  // synchronous is a per-connection setting: NORMAL on each writing connection (in WAL mode a
  // commit then writes the log without an fsync; the default FULL syncs every commit).
  store::Database catalog = store::Database::open(path, store::OpenMode::read_write);
  catalog.exec("PRAGMA synchronous = NORMAL");
  catalog_turns_ = turns_->install_short(catalog.raw());
  catalog_ = std::make_unique<store::Writer>(std::move(catalog), catalog_options);
  maintenance_ =
      std::make_unique<store::Database>(store::Database::open(path, store::OpenMode::read_write));
  maintenance_->exec("PRAGMA synchronous = NORMAL");
  maintenance_turns_ = turns_->install_short(maintenance_->raw());
  {
    auto s = maintenance_->prepare("SELECT id FROM hosts WHERE hostname = ? ORDER BY id LIMIT 1");
    s.bind(1, hostname);
    if (s.step()) host_id_ = s.column_int(0);
  }
  if (host_id_ == 0) host_id_ = catalog_->add_host({0, hostname, std::nullopt});
  auto s = maintenance_->prepare("SELECT id, name FROM workflows");
  while (s.step()) workflows_[s.column_text(1)] = s.column_int(0);
  auto owners = maintenance_->prepare("SELECT name, uid FROM daemon_workflow_owner");
  while (owners.step())
    workflow_owners_[owners.column_text(0)] = static_cast<uid_t>(owners.column_int(1));
}

HostStore::Maintenance HostStore::maintenance() {
  std::unique_lock lock(maintenance_mutex_);
  if (!maintenance_) throw std::logic_error("the host database " + path_ + " is closed");
  if (maintenance_probe_) maintenance_probe_();
  return {std::move(lock), *maintenance_};
}

void HostStore::set_maintenance_probe(std::function<void()> probe) {
  std::lock_guard lock(maintenance_mutex_);
  maintenance_probe_ = std::move(probe);
}

uid_t HostStore::claim_workflow(const std::string& name, uid_t uid, int64_t now_ns) {
  if (auto owner = workflow_owner(name)) return *owner;
  // A new name: recorded first (the row is what holds across restarts), then the first claimant
  // the table kept (another claim may have come between) goes into the map.
  uid_t owner = uid;
  {
    auto m = maintenance();
    auto s = m.db.prepare(
        "INSERT OR IGNORE INTO daemon_workflow_owner(name, uid, claimed_ns) VALUES (?,?,?)");
    s.bind(1, name).bind(2, static_cast<int64_t>(uid)).bind(3, now_ns).execute();
    auto first = m.db.prepare("SELECT uid FROM daemon_workflow_owner WHERE name = ?");
    first.bind(1, name);
    if (first.step()) owner = static_cast<uid_t>(first.column_int(0));
  }
  std::lock_guard lock(maps_mutex_);
  return workflow_owners_.try_emplace(name, owner).first->second;
}

void HostStore::remember_workflow_labels(const std::string& name,
                                         const std::vector<std::string>& labels, bool replace) {
  if (labels.empty()) return;
  nlohmann::json object = nlohmann::json::object();
  for (const auto& label : labels)
    if (auto eq = label.find('='); eq != std::string::npos)
      object[label.substr(0, eq)] = label.substr(eq + 1);
  std::string json = object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::lock_guard lock(maps_mutex_);
  if (replace)
    workflow_labels_.insert_or_assign(name, std::move(json));
  else
    workflow_labels_.try_emplace(name, std::move(json));
}

std::optional<uid_t> HostStore::workflow_owner(const std::string& name) {
  std::lock_guard lock(maps_mutex_);
  auto it = workflow_owners_.find(name);
  if (it == workflow_owners_.end()) return std::nullopt;
  return it->second;
}

HostStore::~HostStore() {
  try {
    close();
  } catch (...) {
  }
}

int HostStore::schema_version() const {
  return store::kSchemaVersion;
}

int64_t HostStore::workflow_id(const std::string& name, const std::optional<std::string>& user) {
  if (auto known = find_workflow(name)) return *known;
  // Creations are serialized (one row per name) on their own mutex: lookups of known workflows
  // never wait for the insert.
  std::lock_guard creating(creating_mutex_);
  if (auto known = find_workflow(name)) return *known;
  store::Workflow w;
  w.name = name;
  w.user = user;
  {
    std::lock_guard labels_lock(maps_mutex_);  // workflow_labels_
    if (auto labels = workflow_labels_.find(name); labels != workflow_labels_.end())
      w.labels_json = labels->second;
  }
  const int64_t id = catalog_->add_workflow(w);
  std::lock_guard lock(workflows_mutex_);
  workflows_[name] = id;
  return id;
}

std::optional<int64_t> HostStore::find_workflow(const std::string& name) {
  std::lock_guard lock(workflows_mutex_);
  auto it = workflows_.find(name);
  if (it == workflows_.end()) return std::nullopt;
  return it->second;
}

void HostStore::upsert_process(int64_t capture_id, int pid, int64_t workflow_id,
                               const std::string& command, int64_t start_ns) {
  store::Process p;
  p.captureId = capture_id;
  p.globalPid = store::global_pid(pid);
  p.pid = pid;
  p.host_id = host_id_;
  p.workflow_id = workflow_id;
  if (!command.empty()) p.command = command;
  p.start_ns = start_ns;
  catalog_->upsert_process(p);
}

int64_t HostStore::open_capture(const std::string& source_path, int64_t start_ns) {
  store::Capture c;
  c.kind = store::CaptureKind::on_demand;
  c.source = "fleetscope-agent";
  c.source_path = source_path;
  c.start_ns = start_ns;
  c.gpu_vendor = "nvidia";
  return catalog_->add_capture(c);
}

HostStore::QueuedBatch HostStore::add_batch(rpc::RecordBatch&& batch, int64_t capture_id) {
  // Decoded on the agent's connection thread into vectors that thread keeps (their capacity
  // comes back from the writer's written batches), then queued whole: one lock per batch, not
  // one per row, and the rows of 8 agents are not interleaved row by row into shared batches.
  thread_local store::RowVectors rows;
  thread_local std::vector<store::GpuInfo> gpus;
  rows.clear();
  gpus.clear();
  QueuedBatch queued;
  queued.rows = decode_batch(std::move(batch), capture_id, rows, gpus);
  for (const auto& gpu : gpus) catalog_->add_gpu(gpu);  // a few rows, the first batch only
  queued.ticket = writer_->add_rows(rows, queued.rows);
  return queued;
}

void HostStore::wait_committed(uint64_t ticket) {
  writer_->wait_committed(ticket);
}

size_t HostStore::commit_batch(rpc::RecordBatch batch, int64_t capture_id) {
  const QueuedBatch queued = add_batch(std::move(batch), capture_id);
  writer_->wait_committed(queued.ticket);
  return queued.rows;
}

void HostStore::close_capture(int64_t capture_id, int64_t end_ns, int64_t dropped,
                              int64_t overhead_ns, const std::optional<std::string>& note) {
  // No flush of the bulk queue: the trace control finalizes a window once its own batches are
  // committed, and other windows' rows do not matter here.
  store::Reader reader(store::Database::open(path_));
  auto capture = reader.capture(capture_id);
  if (!capture) return;
  capture->end_ns = end_ns;
  capture->dropped_records = dropped;
  capture->collector_overhead_ns = overhead_ns;
  if (note) capture->note = note;
  catalog_->update_capture(*capture);
}

std::vector<HostStore::InterruptedCapture> HostStore::interrupted_captures() {
  store::Database db = store::Database::open(path_);
  std::vector<InterruptedCapture> out;
  {
    auto s = db.prepare(
        "SELECT c.id, c.start_ns, o.uid FROM captures c LEFT JOIN daemon_capture_owner o ON "
        "o.captureId = c.id WHERE c.end_ns IS NULL AND c.kind = 'on_demand' AND c.source = "
        "'fleetscope-agent' ORDER BY c.id");
    while (s.step()) {
      InterruptedCapture c;
      c.id = s.column_int(0);
      c.start_ns = s.column_is_null(1) ? 0 : s.column_int(1);
      if (!s.column_is_null(2)) c.uid = s.column_int(2);
      out.push_back(c);
    }
  }
  // The last committed row of each: the latest end (or time) in the event tables, as their
  // description gives them (store/capture_rows.h). Once per start, for the few windows a crash
  // left open.
  for (auto& c : out) {
    const std::optional<int64_t> last = store::capture_last_row_ns(db, c.id);
    c.last_row_ns = last.value_or(c.start_ns);  // no row: the window ends where it began
  }
  return out;
}

CaptureSummary HostStore::analyze(int64_t capture_id) {
  // The capture's rows are committed (see close_capture): no wait for other agents' rows.
  CaptureSummary summary;
  store::Reader reader(store::Database::open(path_));
  analyzer::CaptureData data = analyzer::load_capture(reader, capture_id);
  for (size_t i = 0; i < data.gpu.size(); ++i)
    if (data.gpu.kind[i] == analyzer::GpuEventKind::kernel) ++summary.kernels;
  if (auto utilization = analyzer::capture_gpu_utilization(data))
    summary.gpu_busy_pct = 100.0 * *utilization;  // the analyzer's GPU utilization
  // The one rule for stored vs fresh findings (analyzer/analysis.h): the rows were just committed,
  // so this is the analysis `fleetscope analyze` and `report` would make now; it is stored for
  // what reads the database without analysing (status, the exporter, the Prometheus fleet).
  // Filed under its key (analyzer/analysis_cache.h), so `fleet` reuses it while nothing changes.
  analyzer::AnalysisResult analysis = analyzer::capture_findings(data, &reader);
  if (!analysis.findings.empty())
    summary.top_finding =
        analysis.findings.front().rule + ": " + analysis.findings.front().recommendation;
  if (analysis.source == analyzer::FindingsSource::analysed && !analysis.from_cache)
    analyzer::store_analysis(*catalog_, capture_id, analysis);
  add_workflow_metrics(step_tail_rows(data));
  return summary;
}

std::vector<WorkflowMetricRow> HostStore::step_tail_rows(const analyzer::CaptureData& data) {
  // The step-time tail of each workflow in the window (analyzer step_stats over its iterations),
  // as workflow_metrics rows over the capture's window; deviceId -1: not per device.
  std::vector<WorkflowMetricRow> rows;
  const int64_t start =
      data.capture.start_ns.value_or(data.iterations.empty() ? 0 : data.iterations.front().start);
  const int64_t end = data.capture.end_ns.value_or(start);
  for (const auto& [workflow, durations] : analyzer::step_durations_by_workflow(data)) {
    const analyzer::StepStats s = analyzer::step_stats(durations);
    for (const auto& [metric, value] : {std::pair<const char*, double>{"steps", double(s.count)},
                                        {"step_time_p50_ns", double(s.median_ns)},
                                        {"step_time_p90_ns", double(s.p90_ns)},
                                        {"step_time_p99_ns", double(s.p99_ns)},
                                        {"step_time_jitter", s.jitter}})
      rows.push_back({workflow,
                      {.deviceId = -1,
                       .window_start = start,
                       .window_end = end,
                       .metric = metric,
                       .value = value}});
  }
  return rows;
}

void HostStore::add_device_samples(std::vector<store::DeviceSample> samples) {
  for (auto& s : samples) {
    s.host_id = host_id_;
    writer_->add(std::move(s));
  }
}

void HostStore::add_workflow_metrics(const std::vector<WorkflowMetricRow>& rows) {
  if (rows.empty()) return;
  std::vector<store::WorkflowMetric> stored;
  stored.reserve(rows.size());
  for (const auto& row : rows) {  // workflow ids first: no maintenance lock held while creating
    stored.push_back(row.row);
    stored.back().workflow_id = workflow_id(row.workflow, std::nullopt);
  }
  auto m = maintenance();
  insert_rows(m.db, stored);
}

namespace {

// The rows of `sql`: the table's columns (store::io::select_sql, from workflow_metrics m) and then
// the workflow's name.
std::vector<WorkflowMetricRow> named_metric_rows(store::Statement& s) {
  using Io = store::io::TableIo<store::WorkflowMetric>;
  const int name = s.column_count() - 1;
  std::vector<WorkflowMetricRow> out;
  while (s.step()) out.push_back({s.column_text(name), Io::read(s)});
  return out;
}

// SELECT <workflow_metrics' columns>, the workflow's name FROM workflow_metrics m JOIN workflows w.
std::string named_metrics_sql() {
  using Io = store::io::TableIo<store::WorkflowMetric>;
  return std::string("SELECT ") + Io::select_columns + ", w.name FROM " + Io::table +
         " m JOIN workflows w ON w.id = m.workflow_id";
}

}  // namespace

std::vector<WorkflowMetricRow> HostStore::workflow_metrics(
    const std::optional<std::string>& workflow, std::optional<int64_t> since_ns, int limit) {
  store::Database db = store::Database::open(path_);
  auto s = db.prepare(named_metrics_sql() +
                      " WHERE (?1 IS NULL OR w.name = ?1) AND (?2 IS NULL OR m.window_end >= ?2) "
                      "ORDER BY m.window_start DESC, w.name, m.deviceId, m.metric LIMIT ?3");
  s.bind(1, workflow).bind(2, since_ns).bind(3, static_cast<int64_t>(limit));
  return named_metric_rows(s);
}

std::vector<rpc::Capture> HostStore::captures(std::optional<int64_t> workflow_id,
                                              std::optional<int64_t> since_ns, int limit) {
  store::Reader reader(store::Database::open(path_));
  std::vector<int64_t> of_workflow;
  if (workflow_id) of_workflow = captures_of_workflow(*workflow_id);
  std::vector<rpc::Capture> out;
  auto all = reader.captures();
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.id > b.id; });
  for (const auto& c : all) {
    if (static_cast<int>(out.size()) >= limit) break;
    if (since_ns && c.end_ns && *c.end_ns < *since_ns) continue;
    if (workflow_id && std::find(of_workflow.begin(), of_workflow.end(), c.id) == of_workflow.end())
      continue;
    out.push_back(to_rpc(c));
  }
  return out;
}

std::optional<rpc::Capture> HostStore::capture(int64_t capture_id) {
  store::Reader reader(store::Database::open(path_));
  auto c = reader.capture(capture_id);
  if (!c) return std::nullopt;
  return to_rpc(*c);
}

std::map<std::string, HostStore::WorkflowCaptures> HostStore::workflow_captures() {
  store::Database db = store::Database::open(path_);
  std::map<std::string, WorkflowCaptures> out;
  {
    auto s = db.prepare(
        "SELECT w.name, count(DISTINCT o.captureId) FROM daemon_capture_owner o JOIN workflows w "
        "ON w.id = o.workflow_id GROUP BY w.name");
    while (s.step()) out[s.column_text(0)].captures = s.column_int(1);
  }
  // SQLite answers the bare columns of the row that holds max() (sqlite.org/lang_select.html,
  // "Bare columns in an aggregate query").
  auto s = db.prepare(
      "SELECT w.name, f.rule, max(f.impact_ns) FROM findings f JOIN daemon_capture_owner o ON "
      "o.captureId = f.captureId JOIN workflows w ON w.id = o.workflow_id GROUP BY w.name");
  while (s.step()) {
    auto& entry = out[s.column_text(0)];
    entry.top_rule = s.column_text(1);
    entry.top_impact_ns = s.column_int(2);
  }
  return out;
}

std::map<std::string, HostStore::StepTail> HostStore::workflow_step_tails() {
  store::Database db = store::Database::open(path_);
  // The rows of each workflow's latest window that has a step-time tail (step_tail_rows).
  auto s = db.prepare(named_metrics_sql() +
                      " WHERE m.deviceId = -1 AND m.window_end = (SELECT max(l.window_end) FROM "
                      "workflow_metrics l WHERE l.workflow_id = m.workflow_id AND l.deviceId = -1 "
                      "AND l.metric = 'step_time_p50_ns')");
  std::map<std::string, StepTail> out;
  for (const auto& [workflow, row] : named_metric_rows(s)) {
    StepTail& tail = out[workflow];
    const std::string& metric = row.metric;
    const double value = row.value;
    tail.window_end_ns = row.window_end;
    if (metric == "steps") tail.steps = static_cast<int64_t>(value);
    if (metric == "step_time_p50_ns") tail.p50_ns = value;
    if (metric == "step_time_p90_ns") tail.p90_ns = value;
    if (metric == "step_time_p99_ns") tail.p99_ns = value;
    if (metric == "step_time_jitter") tail.jitter = value;
  }
  return out;
}

std::vector<int64_t> HostStore::captures_of_workflow(int64_t workflow_id) {
  store::Database db = store::Database::open(path_);
  auto s = db.prepare(
      "SELECT captureId FROM daemon_capture_owner WHERE workflow_id = ? ORDER BY captureId");
  s.bind(1, workflow_id);
  std::vector<int64_t> out;
  while (s.step()) out.push_back(s.column_int(0));
  return out;
}

std::optional<int64_t> HostStore::capture_owner(int64_t capture_id) {
  store::Database db = store::Database::open(path_);
  auto s = db.prepare("SELECT uid FROM daemon_capture_owner WHERE captureId = ?");
  s.bind(1, capture_id);
  if (s.step()) return s.column_int(0);
  return std::nullopt;
}

void HostStore::set_capture_owner(int64_t capture_id, int64_t uid, int64_t workflow_id) {
  auto m = maintenance();
  auto s = m.db.prepare(
      "INSERT OR REPLACE INTO daemon_capture_owner(captureId, uid, workflow_id) VALUES (?,?,?)");
  s.bind(1, capture_id).bind(2, uid).bind(3, workflow_id).execute();
}

int64_t HostStore::size_bytes() {
  int64_t total = 0;
  for (const char* suffix : {"", "-wal"}) {
    struct stat info {};
    if (::stat((path_ + suffix).c_str(), &info) == 0) total += info.st_size;
  }
  return total;
}

void HostStore::RetentionStop::request() {
  {
    std::lock_guard lock(mutex_);
    requested_ = true;
    // Under the mutex: the connection is not closed while it is interrupted (detach waits).
    if (db_) sqlite3_interrupt(db_);
  }
  requested_cv_.notify_all();
}

bool HostStore::RetentionStop::requested() const {
  return requested_;
}

bool HostStore::RetentionStop::wait(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return requested_cv_.wait_for(lock, timeout, [this] { return requested_.load(); });
}

void HostStore::RetentionStop::attach(sqlite3* db) {
  std::lock_guard lock(mutex_);
  db_ = db;
  // sqlite3_interrupt is lost when no statement runs at that moment (SQLite clears it as the
  // next one starts); the progress handler sees the request inside any later statement too.
  sqlite3_progress_handler(
      db, 1000, [](void* self) { return static_cast<RetentionStop*>(self)->requested() ? 1 : 0; },
      this);
}

void HostStore::RetentionStop::detach() {
  std::lock_guard lock(mutex_);
  if (db_) sqlite3_progress_handler(db_, 0, nullptr, nullptr);
  db_ = nullptr;
}

namespace {
struct RetentionStopped {};  // thrown where the run sees a stop request between its steps
}  // namespace

HostStore::RetentionResult HostStore::apply_retention(const RetentionPolicy& policy, int64_t now_ns,
                                                      RetentionStop* stop) {
  RetentionResult result;
  if (stop && stop->requested()) {
    result.stopped = true;
    return result;
  }
  writer_->flush();  // the samples appended so far count (waits for the bulk queue, no lock held)
  // A connection of its own: no daemon lock is held while it deletes (the trace control, the
  // RPCs and the writers go on; SQLite serializes the short transactions below with theirs).
  std::unique_ptr<WriteTurns::ShortWriter> retention_turns;  // outlives the connection
  store::Database retention = store::Database::open(path_, store::OpenMode::read_write);
  retention.exec("PRAGMA synchronous = NORMAL");
  retention_turns = turns_->install_short(retention.raw());
  store::Database& db = retention;
  // Detached before the connection closes (declared after it).
  struct Attached {
    RetentionStop* stop;
    ~Attached() {
      if (stop) stop->detach();
    }
  } attached{stop};
  if (stop) stop->attach(db.raw());
  auto check_stop = [&] {
    if (stop && stop->requested()) throw RetentionStopped{};
  };
  auto drop_capture = [&](int64_t id) {
    check_stop();
    ImmediateTransaction transaction(db);
    // The event tables from their one description (store/capture_rows.h), then what else is
    // kept per capture.
    store::delete_capture_rows(db, id);
    for (const char* table : {"TARGET_INFO_GPU", "findings", "daemon_capture_owner"}) {
      auto s = db.prepare(std::string("DELETE FROM ") + table + " WHERE captureId = ?");
      s.bind(1, id).execute();
    }
    // Its analysis-cache entry (analyzer/analysis_cache.h) goes with its findings.
    db.prepare("DELETE FROM meta WHERE key = ?").bind(1, analyzer::analysis_meta_key(id)).execute();
    db.prepare("DELETE FROM captures WHERE id = ?").bind(1, id).execute();
    if (stop && stop->in_drop_probe) stop->in_drop_probe(id, *stop);
    check_stop();  // a request while a short statement ran: still rolled back whole
    transaction.commit();
    ++result.captures_dropped;
  };
  auto oldest_capture = [&](std::optional<int64_t> ended_before) -> std::optional<int64_t> {
    auto s = db.prepare(
        "SELECT id FROM captures WHERE end_ns IS NOT NULL AND (?1 IS NULL OR end_ns < ?1) ORDER BY "
        "end_ns, id LIMIT 1");
    s.bind(1, ended_before);
    if (s.step()) return s.column_int(0);
    return std::nullopt;
  };
  try {
    // Metrics first: old samples become per-minute means (kept), then only the means survive.
    if (policy.downsample_after_ns > 0) {
      const int64_t cutoff = now_ns - policy.downsample_after_ns;
      ImmediateTransaction transaction(db);
      {  // statements finalized before the temporary table is dropped
        auto count =
            db.prepare("SELECT count(*) FROM device_samples WHERE captureId IS NULL AND ts < ?");
        count.bind(1, cutoff);
        count.step();
        result.samples_downsampled = count.column_int(0);
        auto mean = db.prepare(
            "CREATE TEMP TABLE downsampled AS SELECT (ts / ?1) * ?1 AS ts, host_id, deviceId, "
            "metric_id, avg(value) AS value "
            "FROM device_samples WHERE captureId IS NULL AND ts < ?2 GROUP BY 1, 2, 3, 4");
        mean.bind(1, policy.downsample_bucket_ns).bind(2, cutoff).execute();
        auto drop = db.prepare("DELETE FROM device_samples WHERE captureId IS NULL AND ts < ?");
        drop.bind(1, cutoff).execute();
        db.exec(
            "INSERT INTO device_samples(ts, host_id, deviceId, metric_id, value) SELECT ts, "
            "host_id, "
            "deviceId, metric_id, value FROM downsampled");
      }
      db.exec("DROP TABLE downsampled");
      transaction.commit();
    }
    check_stop();
    if (policy.max_age_ns > 0) {
      const int64_t cutoff = now_ns - policy.max_age_ns;
      while (auto id = oldest_capture(cutoff)) drop_capture(*id);
      auto s = db.prepare("DELETE FROM device_samples WHERE ts < ?");
      s.bind(1, cutoff).execute();
      result.samples_dropped += sqlite3_changes(db.raw());
      check_stop();
      auto m = db.prepare("DELETE FROM workflow_metrics WHERE window_end < ?");
      m.bind(1, cutoff).execute();
    }
    check_stop();
    if (policy.max_bytes > 0) {
      db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
      // Deleted pages are reused by SQLite; the file shrinks only with VACUUM, which would block
      // the writer, so the bound is on the pages in use (page_count - freelist_count).
      auto used = [&] {
        auto s = db.prepare(
            "SELECT (SELECT page_count FROM pragma_page_count()) - (SELECT freelist_count FROM "
            "pragma_freelist_count()), (SELECT page_size FROM pragma_page_size())");
        s.step();
        return s.column_int(0) * s.column_int(1);
      };
      while (used() > policy.max_bytes) {
        auto id = oldest_capture(std::nullopt);
        if (!id) break;
        drop_capture(*id);
      }
    }
  } catch (const RetentionStopped&) {
    result.stopped = true;
  } catch (const std::exception&) {
    if (!stop || !stop->requested()) throw;
    result.stopped = true;  // the statement that ran was interrupted (and rolled back)
  }
  return result;
}

void HostStore::flush() {
  writer_->flush();
}

void HostStore::close() {
  if (!writer_) return;
  {
    std::lock_guard lock(maintenance_mutex_);
    maintenance_.reset();
  }
  // Each writer is finished once, even when finishing fails (a damaged file): both are taken out
  // first, the bulk writer is finished even if the catalog's finish threw, and the first error
  // is reported after both were tried.
  std::unique_ptr<store::Writer> catalog = std::move(catalog_);
  std::unique_ptr<store::Writer> writer = std::move(writer_);
  std::exception_ptr error;
  try {
    if (catalog) catalog->finish();
  } catch (...) {
    error = std::current_exception();
  }
  try {
    writer->finish();
  } catch (...) {
    if (!error) error = std::current_exception();
  }
  turns_->stop();
  if (error) std::rethrow_exception(error);
}

}  // namespace fleetscope::daemon
