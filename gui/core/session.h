// The GUI's open sources (databases and traces, several at once: ranks of one job, hosts of a
// fleet) and the work it does on them off the GUI thread. Everything a user reads comes from the
// analyzer's analysis session (analyzer/session.h) and the sharer's planner with the host's
// settings (sharer/host_planning.h) — the code `fleetscope fleet`, `analyze` and `share plan`
// run, so the GUI and the CLI give the same ranking, findings and plan on the same files. Only
// the chart series are made here. Plain C++: the Qt loader (loader.h) calls these functions in
// worker threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/analyzer/critical_path.h"
#include "fleetscope/analyzer/diff.h"
#include "fleetscope/analyzer/session.h"
#include "fleetscope/analyzer/step_metrics.h"
#include "fleetscope/sharer/planner.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::gui {

using Progress = std::function<void(const std::string& stage, int64_t done)>;
using CaptureKey = analyzer::CaptureKey;

struct Session {
  // Thread-safe where the GUI uses it concurrently (analysis(), loaded(), fleet(), the sources'
  // readers); sources are only added while the session is opened.
  std::shared_ptr<analyzer::AnalysisSession> analysis;
  std::vector<CaptureKey> captures;  // every source's, in source order

  const std::vector<std::shared_ptr<analyzer::SessionSource>>& sources() const {
    return analysis->sources();
  }
  const analyzer::SessionSource& source(size_t index) const { return *sources().at(index); }
  const store::Capture* capture(const CaptureKey& key) const;
  // A new read-only connection to one source (one per worker thread).
  std::unique_ptr<store::Reader> reader(size_t source = 0) const;
  // Where zoom caches go (the database file), empty for an imported trace.
  std::string cache_base(size_t source) const;
  // "capture 3" with one source, "b.db · capture 3" with several.
  std::string capture_label(const CaptureKey& key) const;
  // The window title: "a.db (fleetscope database)", or "3 sources: a.db, b.db, c.db".
  std::string title() const;
};

// The files to open for `paths`: a folder stands for the traces in it (fleetscope databases,
// nsys exports, Kineto JSON: *.db, *.sqlite, *.json, *.json.gz), sorted by name.
std::vector<std::string> expand_sources(const std::vector<std::string>& paths);

// Opens every path (expand_sources). Throws fleetscope::InputError naming the file and the
// problem (not a database, a newer schema, a corrupt or truncated file, a trace the importer
// rejects); LoadCancelled.
std::shared_ptr<Session> open_session(const std::vector<std::string>& paths,
                                      const Progress& progress = {},
                                      const std::atomic<bool>* cancel = nullptr);
inline std::shared_ptr<Session> open_session(const std::string& path) {
  return open_session(std::vector<std::string>{path});
}

// One source's summary for the table across the open sources.
struct SourceSummary {
  std::string path, label, format;
  int64_t captures = 0, workflows = 0;
  int64_t first_ns = 0, last_ns = 0;  // captures' start/end, 0 when unknown
};
std::vector<SourceSummary> source_summaries(const Session& session);

// One capture's analysis: the analysis session's (findings, rule outcomes, data: cached there),
// its step breakdown, and the data behind the utilization and memory charts.
struct MemoryPoint {
  int64_t ts = 0;
  int64_t bytes = 0;  // allocated on the device after the event
};
// An event the critical path runs through (critical_path_events.h finds it on the timeline).
struct PathEvent {
  std::string kind, name;  // kind: kernel, memcpy, memset, runtime, cpu_op
  int64_t start = 0, end = 0;
  int32_t device = -1, stream = -1;  // GPU events
  int64_t global_tid = -1;           // host events
};
// What the GUI keeps of a capture's analysis: the results, not the analyzer's copy of the
// capture's events (CaptureData: `fleetscope analyze` of 10 M kernels peaks at 675,092 KB,
// docs/benchmarks.md "Analyzer memory without copies of the events"), which is freed once they
// are made (the session keeps no events either: open_session sets
// AnalysisSession::set_keep_data).
struct CaptureAnalysis {
  CaptureKey key;
  std::shared_ptr<const analyzer::CaptureAnalysis> analysis;  // its `data` is null
  const analyzer::AnalysisResult& result() const { return analysis->result; }
  std::vector<analyzer::StepBreakdown> steps;
  std::map<int32_t, std::vector<MemoryPoint>> memory;  // per device
  std::vector<int32_t> devices;                        // with GPU events
  // HTA's critical path of the first iteration, as `analyze --format json` reports it, and the
  // events it runs through, in path order.
  analyzer::CriticalPath critical_path;
  std::vector<PathEvent> critical_events;
  // Per device, the union of its kernels: the kernel utilization chart's input
  // (analyzer::gpu_utilization_timeline), a few intervals where the events are millions.
  std::map<int32_t, analyzer::IntervalSet> kernel_busy;
};
CaptureAnalysis analyze_capture(const Session& session, const CaptureKey& key,
                                const std::atomic<bool>* cancel = nullptr);

// `fleetscope diff BEFORE AFTER` on two open captures (analyzer/diff.h), from the analysis
// session's cached data.
analyzer::CaptureDiff compare_captures(const Session& session, const CaptureKey& before,
                                       const CaptureKey& after,
                                       const std::atomic<bool>* cancel = nullptr);

// The fleet ranking over every source (analyzer::AnalysisSession::fleet, `fleetscope fleet`).
using FleetRows = std::vector<analyzer::WorkflowWaste>;
// The capture to open first: the worst job's (by wasted GPU-hours) first capture; the first
// capture when the ranking is empty.
std::optional<CaptureKey> most_wasteful_capture(const Session& session, const FleetRows& fleet);
// A fleet row's captures as keys of the session.
std::vector<CaptureKey> capture_keys(const Session& session, const analyzer::WorkflowWaste& row);

// The sharing panel's state: plans already recorded (lane_plans) and the plan the sharer's
// planner makes now from the analysis session's candidates, with the host's settings and the
// user's what-if changes.
struct StoredPlan {
  int64_t id = 0;
  int64_t created_ns = 0;
  std::string policy;
  std::string plan_json;
  bool applied = false;
};
// A sharing_events row (what the daemon's sharing service decided), with the fields that most
// kinds carry in their detail JSON (sharer/src/sharing_service.cpp) taken out for the table.
struct SharingEvent {
  int64_t ts_ns = 0;
  std::optional<int64_t> plan_id;
  std::string kind;
  std::string detail_json;
  std::optional<int64_t> pid;
  std::string workflow, gpu, lane;  // empty when the event does not name them
};
SharingEvent sharing_event(int64_t ts_ns, std::optional<int64_t> plan_id, std::string kind,
                           std::string detail_json);
// The sharing panel shows at most this many events, the latest ones.
inline constexpr int kMaxSharingEvents = 1000;

// The what-if controls: changes to the host's planner settings, as `share plan`'s flags make
// them (--max-slowdown, --single-lane, --margin-sigma, --interference-alpha, --policy). Unset:
// the host's.
struct WhatIf {
  std::optional<double> max_slowdown;
  bool single_lane = false;
  std::optional<double> margin_sigma;
  std::optional<double> interference_alpha;  // replaces the host's interference model
  // The lanes' turn policy the plan is made for (and Apply hands over): the planner predicts
  // each shared lane's waits by it (sharer/turn_model.h).
  sharer::TurnOrder turn_order = sharer::TurnOrder::kFifo;
};

struct SharingState {
  std::vector<StoredPlan> stored;
  std::vector<SharingEvent> events;  // oldest first
  bool events_truncated = false;     // more than kMaxSharingEvents in the database
  std::vector<analyzer::ConsolidationCandidate> candidates;
  std::vector<sharer::JobProfile> jobs;  // the candidates the planner can place
  sharer::ConsolidationPlan plan;
  std::vector<std::string> skipped;  // candidates left out, with the reason
  sharer::PlannerOptions options;    // what the plan was made with
  std::string interference;          // the interference model used (its description)
  std::string interference_source;   // "published", "calibration" or "flag" (interference.h)
  std::string context_source;        // where the CUDA context figure came from
};

// Plans as `fleetscope share plan SOURCES... [flags]` does. Throws std::runtime_error for a bad
// host config (naming the file and line).
SharingState plan_sharing(const Session& session, const WhatIf& what_if = {},
                          const std::atomic<bool>* cancel = nullptr);

}  // namespace fleetscope::gui
