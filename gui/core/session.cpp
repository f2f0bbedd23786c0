#include "session.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "critical_path_events.h"
#include "fleetscope/analyzer/device_metrics.h"
#include "fleetscope/sharer/host_planning.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/table_io.h"
#include "timeline_data.h"

namespace fleetscope::gui {

namespace {

void check(const std::atomic<bool>* cancel) {
  if (cancel && cancel->load()) throw LoadCancelled();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

const store::Capture* Session::capture(const CaptureKey& key) const {
  if (key.source >= sources().size()) return nullptr;
  for (const auto& c : source(key.source).captures)
    if (c.id == key.capture_id) return &c;
  return nullptr;
}

std::unique_ptr<store::Reader> Session::reader(size_t index) const {
  return source(index).reader();
}

std::string Session::cache_base(size_t index) const {
  const auto& s = source(index);
  return s.imported ? std::string() : s.path;
}

std::string Session::capture_label(const CaptureKey& key) const {
  const std::string capture = "capture " + std::to_string(key.capture_id);
  return sources().size() > 1 ? source(key.source).label + " · " + capture : capture;
}

std::string Session::title() const {
  if (sources().size() == 1) return source(0).label + " (" + source(0).format + ")";
  std::string text = std::to_string(sources().size()) + " sources: ";
  for (size_t i = 0; i < sources().size(); ++i) text += (i ? ", " : "") + source(i).label;
  return text;
}

std::vector<std::string> expand_sources(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& path : paths) {
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
      out.push_back(path);
      continue;
    }
    std::vector<std::string> inside;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      if (!entry.is_regular_file(ec)) continue;
      const std::string name = entry.path().filename().string();
      if (ends_with(name, ".db") || ends_with(name, ".sqlite") || ends_with(name, ".json") ||
          ends_with(name, ".json.gz"))
        inside.push_back(entry.path().string());
    }
    if (inside.empty())
      throw InputError(path, "directory",
                       "no traces in this folder (expected *.db, *.sqlite, *.json, *.json.gz)");
    std::sort(inside.begin(), inside.end());
    out.insert(out.end(), inside.begin(), inside.end());
  }
  return out;
}

std::shared_ptr<Session> open_session(const std::vector<std::string>& paths,
                                      const Progress& progress, const std::atomic<bool>* cancel) {
  auto session = std::make_shared<Session>();
  session->analysis = std::make_shared<analyzer::AnalysisSession>();
  // The GUI keeps results, not the analyzer's copy of each capture's events (CaptureAnalysis).
  session->analysis->set_keep_data(false);
  for (const auto& path : expand_sources(paths)) {
    check(cancel);
    if (progress) progress("opening " + std::filesystem::path(path).filename().string(), 0);
    session->analysis->open(path, progress, [cancel] { check(cancel); });
  }
  for (const auto& ref : session->analysis->captures()) session->captures.push_back(ref.key);
  return session;
}

std::vector<SourceSummary> source_summaries(const Session& session) {
  std::vector<SourceSummary> out;
  for (const auto& s : session.sources()) {
    SourceSummary row{
        s->path, s->label, s->format, int64_t(s->captures.size()), int64_t(s->workflows.size()),
        0,       0};
    for (const auto& c : s->captures) {
      if (c.start_ns && (!row.first_ns || *c.start_ns < row.first_ns)) row.first_ns = *c.start_ns;
      if (c.end_ns && *c.end_ns > row.last_ns) row.last_ns = *c.end_ns;
    }
    out.push_back(std::move(row));
  }
  return out;
}

CaptureAnalysis analyze_capture(const Session& session, const CaptureKey& key,
                                const std::atomic<bool>* cancel) {
  CaptureAnalysis out;
  out.key = key;
  auto analysed = session.analysis->analysis(key, [cancel] { check(cancel); });
  // The events: the fresh analysis hands them over once; a cached one comes without them.
  std::shared_ptr<const analyzer::CaptureData> events =
      analysed->data ? analysed->data
                     : session.analysis->loaded(key, [cancel] { check(cancel); })->data;
  const analyzer::CaptureData& data = *events;
  out.steps = analyzer::step_breakdown(data);
  check(cancel);
  out.critical_path = analyzer::critical_path(data);
  out.critical_events = critical_path_members(out.critical_path, data);
  for (const auto& [device, members] : data.events_by_device)
    out.kernel_busy[device] = analyzer::kernel_busy(data, device);
  // Only the results stay: the events are freed with `events` (the session keeps none).
  auto kept = std::make_shared<analyzer::CaptureAnalysis>(*analysed);
  kept->data.reset();
  out.analysis = std::move(kept);
  for (const auto& [device, members] : data.events_by_device) out.devices.push_back(device);
  for (const auto& m : data.memory) {
    if (m.deviceId < 0) continue;
    auto& series = out.memory[m.deviceId];
    const int64_t level = m.total_allocated ? *m.total_allocated
                                            : (series.empty() ? 0 : series.back().bytes) + m.bytes;
    series.push_back({m.ts, level});
  }
  return out;
}

analyzer::CaptureDiff compare_captures(const Session& session, const CaptureKey& before,
                                       const CaptureKey& after, const std::atomic<bool>* cancel) {
  auto a = session.analysis->loaded(before, [cancel] { check(cancel); });
  auto b = session.analysis->loaded(after, [cancel] { check(cancel); });
  return analyzer::diff_captures(*a->data, *b->data);
}

std::vector<CaptureKey> capture_keys(const Session& session, const analyzer::WorkflowWaste& row) {
  std::vector<CaptureKey> keys;
  for (const auto& [label, id] : row.capture_refs)
    for (size_t i = 0; i < session.sources().size(); ++i)
      if (session.source(i).label == label) keys.push_back({i, id});
  return keys;
}

std::optional<CaptureKey> most_wasteful_capture(const Session& session, const FleetRows& fleet) {
  for (const auto& row : fleet) {
    const auto keys = capture_keys(session, row);
    if (!keys.empty()) return keys.front();
  }
  if (!session.captures.empty()) return session.captures.front();
  return std::nullopt;
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

SharingState plan_sharing(const Session& session, const WhatIf& what_if,
                          const std::atomic<bool>* cancel) {
  SharingState out;
  // Recorded plans and the sharing service's decisions, from every database.
  for (size_t i = 0; i < session.sources().size(); ++i) {
    check(cancel);
    auto reader = session.reader(i);
    // The tables' columns as schema/tables.py describes them (store/table_io.h).
    {
      using Io = store::io::TableIo<store::LanePlan>;
      auto st = reader->database().prepare(store::io::select_sql<store::LanePlan>() +
                                           " ORDER BY id DESC");
      while (st.step()) {
        store::LanePlan plan = Io::read(st);
        out.stored.push_back({plan.id, plan.created_ns, std::move(plan.policy),
                              std::move(plan.plan_json), plan.applied});
      }
    }
    using Io = store::io::TableIo<store::SharingEvent>;
    auto st = reader->database().prepare(store::io::select_sql<store::SharingEvent>() +
                                         " ORDER BY rowid DESC LIMIT ?");
    st.bind(1, int64_t{kMaxSharingEvents} + 1);
    std::vector<SharingEvent> events;
    while (st.step()) {
      if (events.size() == size_t(kMaxSharingEvents)) {
        out.events_truncated = true;
        break;
      }
      store::SharingEvent row = Io::read(st);
      events.push_back(
          sharing_event(row.ts_ns, row.plan_id, std::move(row.kind), std::move(row.detail_json)));
    }
    out.events.insert(out.events.end(), events.rbegin(), events.rend());
  }
  std::stable_sort(out.events.begin(), out.events.end(),
                   [](const SharingEvent& a, const SharingEvent& b) { return a.ts_ns < b.ts_ns; });
  if (out.events.size() > size_t(kMaxSharingEvents)) {
    out.events.erase(out.events.begin(), out.events.end() - kMaxSharingEvents);
    out.events_truncated = true;
  }
  // The plan: the host's settings with the what-if changes (share plan's flags), the analysis
  // session's planner inputs.
  const sharer::HostPlanning host = sharer::host_planning();
  out.options = host.options;
  out.options.single_lane = what_if.single_lane;
  out.options.turn_order = what_if.turn_order;
  if (what_if.max_slowdown) out.options.max_slowdown = *what_if.max_slowdown;
  if (what_if.margin_sigma) out.options.memory.margin.z = *what_if.margin_sigma;
  const sharer::InterferenceCalibration interference =
      what_if.interference_alpha ? sharer::interference_from_flag(*what_if.interference_alpha)
                                 : host.interference;
  out.options.interference = interference.model;
  out.interference = interference.description;
  out.interference_source = interference.source;
  out.context_source = host.context_source;
  analyzer::PlanInputs inputs =
      session.analysis->plan_inputs(out.options.memory, [cancel] { check(cancel); });
  out.candidates = std::move(inputs.candidates);
  out.jobs = std::move(inputs.jobs);
  out.skipped = std::move(inputs.skipped);
  out.plan = sharer::plan_consolidation(out.jobs, out.options);
  return out;
}

}  // namespace fleetscope::gui
