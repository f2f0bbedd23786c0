#include "session.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "fleetscope/analyzer/attribution.h"
#include "fleetscope/analyzer/gpu_utilization.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/error.h"
#include "timeline_data.h"

namespace fleetscope::gui {

std::unique_ptr<store::Reader> Session::reader() const {
  if (keeper)
    return std::make_unique<store::Reader>(keeper->another_connection(store::OpenMode::read_only));
  return std::make_unique<store::Reader>(source_path);
}

namespace {

bool is_fleetscope_database(const std::string& path) {
  try {
    store::Database db = store::Database::open_external(path);
    auto st =
        db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
    return st.step() && st.column_int(0) > 0;
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    // SQLite's own words ("file is not a database", "database disk image is malformed",
    // "database is locked") with the file in front.
    throw InputError(path, "sqlite_master",
                     std::string("cannot read the SQLite schema: ") + e.what());
  }
}

void check(const std::atomic<bool>* cancel) {
  if (cancel && cancel->load()) throw LoadCancelled();
}

}  // namespace

std::shared_ptr<Session> open_session(const std::string& path, const Progress& progress,
                                      const std::atomic<bool>* cancel) {
  auto session = std::make_shared<Session>();
  session->source_path = path;
  const importers::Format format = importers::detect_format(path);
  if (format == importers::Format::unknown)
    throw InputError(path, "byte 0",
                     "not a trace: expected a fleetscope database, a Kineto JSON trace (.json, "
                     ".json.gz) or an nsys SQLite export");
  std::unique_ptr<store::Reader> reader;
  if (format == importers::Format::nsys_sqlite && is_fleetscope_database(path)) {
    session->format = "fleetscope database";
    reader = std::make_unique<store::Reader>(path);  // refuses a newer schema, names both versions
  } else {
    session->format =
        format == importers::Format::nsys_sqlite ? "nsys SQLite export" : "Kineto JSON";
    importers::ImportOptions options;
    options.progress_every_events = 50000;
    options.progress = [&](const importers::ImportProgress& p) {
      check(cancel);
      if (progress) progress("import", p.events);
    };
    importers::MemoryImport imported = importers::import_to_memory(path, options);
    check(cancel);
    // The timeline's window queries and the SQL console want the indexes the import skipped.
    imported.database.exec(store::index_sql());
    session->imported = true;
    session->keeper = std::make_shared<store::Database>(std::move(imported.database));
    reader = session->reader();
  }
  session->captures = reader->captures();
  session->workflows = reader->workflows();
  return session;
}

sharer::JobProfile job_profile(const analyzer::ConsolidationCandidate& c,
                               const std::string& where) {
  sharer::JobProfile job;
  const std::string gpu =
      where + "#capture" + std::to_string(c.capture_id) + "/gpu" + std::to_string(c.device);
  job.job_id =
      (c.workflow.empty() ? "capture" + std::to_string(c.capture_id) : c.workflow) + "@" + gpu;
  job.workflow = c.workflow;
  job.gpu = gpu + " (" + c.gpu_name + ")";
  job.persistent_bytes = c.persistent_bytes;
  job.ephemeral_peak_bytes = c.ephemeral_peak_bytes;
  job.gpu_capacity_bytes = c.gpu_memory_bytes;
  job.utilization = c.utilization;
  job.iteration_ns = c.iteration_ns;
  job.peak_stddev_bytes = c.ephemeral_peak_stddev_bytes;
  job.labels = c.labels;
  return job;
}

SharingEvent sharing_event(int64_t ts_ns, std::optional<int64_t> plan_id, std::string kind,
                           std::string detail_json) {
  SharingEvent e{ts_ns, plan_id, std::move(kind), std::move(detail_json), std::nullopt, {}, {}, {}};
  // A detail that is not a JSON object is still shown whole in the detail column.
  const auto detail = nlohmann::json::parse(e.detail_json, nullptr, /*allow_exceptions=*/false);
  if (!detail.is_object()) return e;
  auto text = [&](const char* key) {
    auto it = detail.find(key);
    return it != detail.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (auto it = detail.find("pid"); it != detail.end() && it->is_number_integer())
    e.pid = it->get<int64_t>();
  e.workflow = text("workflow");
  e.gpu = text("gpu");
  e.lane = text("lane");
  return e;
}

SessionAnalysis analyze_session(const Session& session, const Progress& progress,
                                const std::atomic<bool>* cancel) {
  SessionAnalysis out;
  auto reader = session.reader();
  const auto stored_findings = reader->findings();
  std::map<std::string, FleetRow> fleet;
  std::map<std::string, std::map<std::string, int64_t>> rule_impact;
  const std::string where = std::filesystem::path(session.source_path).filename().string();
  for (const auto& capture : session.captures) {
    check(cancel);
    if (progress) progress("analysis of capture " + std::to_string(capture.id), 0);
    auto data = std::make_shared<analyzer::CaptureData>(analyzer::load_capture(
        *reader, capture.id, [&](const std::string&, int64_t) { check(cancel); }));
    CaptureAnalysis ca;
    ca.capture_id = capture.id;
    ca.result = analyzer::analyze_capture(*data);
    // Findings a user stored with `fleetscope analyze` (possibly with other thresholds) win.
    std::vector<store::Finding> stored;
    for (const auto& f : stored_findings)
      if (f.captureId == capture.id) stored.push_back(f);
    if (!stored.empty()) {
      std::sort(stored.begin(), stored.end(),
                [](const auto& a, const auto& b) { return a.impact_ns > b.impact_ns; });
      ca.result.findings = std::move(stored);
    }
    ca.steps = analyzer::step_breakdown(*data);
    for (const auto& [device, members] : data->events_by_device) ca.devices.push_back(device);
    for (const auto& m : data->memory) {
      if (m.deviceId < 0) continue;
      auto& series = ca.memory[m.deviceId];
      const int64_t level = m.total_allocated
                                ? *m.total_allocated
                                : (series.empty() ? 0 : series.back().bytes) + m.bytes;
      series.push_back({m.ts, level});
    }
    // Fleet rows: each job's GPU utilization per device (analyzer/gpu_utilization.h), as
    // analyzer::rank_workflows sums it.
    std::set<std::string> jobs_here;
    for (const auto& [key, members] : analyzer::events_by_workflow_device(*data)) {
      const analyzer::WorkflowInfo info = analyzer::workflow_info(*data, key.first);
      FleetRow& row = fleet[info.name];
      row.workflow = info.name;
      if (row.user.empty()) row.user = info.user;
      const analyzer::GpuUtilization u =
          analyzer::job_gpu_utilization(*data, key.first, key.second, members);
      row.span_ns += u.window.length();
      row.busy_ns += u.busy_ns;
      ++row.devices;
      if (std::find(row.capture_ids.begin(), row.capture_ids.end(), capture.id) ==
          row.capture_ids.end())
        row.capture_ids.push_back(capture.id);
      jobs_here.insert(info.name);
    }
    for (const auto& f : ca.result.findings)
      for (const auto& name : jobs_here)
        rule_impact[name][f.rule] += f.impact_ns / int64_t(jobs_here.size());
    for (auto& c : analyzer::consolidation_candidates(*data))
      out.sharing.candidates.push_back(std::move(c));
    ca.data = std::move(data);
    out.captures.push_back(std::move(ca));
  }
  for (auto& [name, row] : fleet) {
    for (const auto& [rule, impact] : rule_impact[name])
      if (impact > row.top_impact_ns) row.top_impact_ns = impact, row.top_rule = rule;
    out.fleet.push_back(std::move(row));
  }
  std::sort(out.fleet.begin(), out.fleet.end(), [](const FleetRow& a, const FleetRow& b) {
    const int64_t wa = a.span_ns - a.busy_ns, wb = b.span_ns - b.busy_ns;
    return wa != wb ? wa > wb : a.workflow < b.workflow;
  });
  // Sharing: recorded plans, then the planner on the measurable candidates.
  {
    auto st = reader->database().prepare(
        "SELECT id, created_ns, policy, plan, applied FROM lane_plans ORDER BY id DESC");
    while (st.step())
      out.sharing.stored.push_back({st.column_int(0), st.column_int(1), st.column_text(2),
                                    st.column_text(3), st.column_int(4) != 0});
  }
  {
    auto st = reader->database().prepare(
        "SELECT ts, plan_id, kind, detail FROM sharing_events ORDER BY rowid DESC LIMIT ?");
    st.bind(1, int64_t{kMaxSharingEvents} + 1);
    while (st.step()) {
      if (out.sharing.events.size() == size_t(kMaxSharingEvents)) {
        out.sharing.events_truncated = true;
        break;
      }
      out.sharing.events.push_back(sharing_event(
          st.column_int(0),
          st.column_is_null(1) ? std::nullopt : std::optional<int64_t>(st.column_int(1)),
          st.column_text(2), st.column_text(3)));
    }
    std::reverse(out.sharing.events.begin(), out.sharing.events.end());
  }
  for (const auto& c : out.sharing.candidates) {
    // Without measured memory P = T = 0 would pass any safety check: such jobs cannot be placed.
    if (!c.memory_measured || c.gpu_memory_bytes <= 0) {
      out.sharing.skipped.push_back(
          (c.workflow.empty() ? "capture " + std::to_string(c.capture_id) : c.workflow) +
          " on GPU " + std::to_string(c.device) + ": " +
          (!c.memory_measured ? "no memory events (P and T unknown)" : "GPU capacity unknown"));
      continue;
    }
    out.sharing.jobs.push_back(job_profile(c, where));
  }
  out.sharing.plan = sharer::plan_consolidation(out.sharing.jobs);
  return out;
}

}  // namespace fleetscope::gui
