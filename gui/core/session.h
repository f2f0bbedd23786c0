// An open trace: a fleetscope database, or a Kineto JSON / nsys SQLite file imported into a
// private in-memory database (as `fleetscope analyze TRACE` does), and the work the GUI does on it
// off the GUI thread. Plain C++: the Qt loader (loader.h) runs these functions in worker threads,
// each on its own database connection. No analysis here: every number comes from the analyzer,
// store and sharer libraries.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/capture_data.h"
#include "fleetscope/analyzer/consolidation.h"
#include "fleetscope/analyzer/gpu_utilization.h"
#include "fleetscope/analyzer/step_metrics.h"
#include "fleetscope/sharer/planner.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::gui {

using Progress = std::function<void(const std::string& stage, int64_t done)>;

struct Session {
  std::string source_path;  // what the user opened
  std::string format;       // "fleetscope database", "Kineto JSON", "nsys SQLite export"
  bool imported = false;    // true: held in memory, nothing is written beside the file
  std::vector<store::Capture> captures;
  std::vector<store::Workflow> workflows;

  // A new read-only connection (one per worker thread).
  std::unique_ptr<store::Reader> reader() const;
  // Where zoom caches go (the database file), empty for an imported trace.
  std::string cache_base() const { return imported ? std::string() : source_path; }

  std::shared_ptr<store::Database> keeper;  // keeps an in-memory database alive
};

// Opens `path`. Throws fleetscope::InputError naming the file and the problem (not a database, a
// newer schema, a corrupt or truncated file, a trace the importer rejects); LoadCancelled.
std::shared_ptr<Session> open_session(const std::string& path, const Progress& progress = {},
                                      const std::atomic<bool>* cancel = nullptr);

// One capture's analysis: the analyzer's findings and rule outcomes, its step breakdown, and the
// data behind the utilization and memory charts.
struct MemoryPoint {
  int64_t ts = 0;
  int64_t bytes = 0;  // allocated on the device after the event
};
struct CaptureAnalysis {
  int64_t capture_id = 0;
  std::shared_ptr<const analyzer::CaptureData> data;  // for charts over any range
  analyzer::AnalysisResult result;
  std::vector<analyzer::StepBreakdown> steps;
  std::map<int32_t, std::vector<MemoryPoint>> memory;  // per device
  std::vector<int32_t> devices;                        // with GPU events
};

// One job (workflow) across the open database's captures, as the fleet ranking defines it
// (analyzer/fleet.h): GPU-hours = summed per-device GPU-utilization windows, wasted = idle inside
// them; the top finding is the largest-impact finding of the job's captures.
struct FleetRow {
  std::string workflow;
  std::string user;
  std::vector<int64_t> capture_ids;
  int64_t devices = 0;
  int64_t span_ns = 0, busy_ns = 0;
  std::string top_rule;
  int64_t top_impact_ns = 0;
  double gpu_hours() const { return double(span_ns) / 3.6e12; }
  double wasted_gpu_hours() const { return double(span_ns - busy_ns) / 3.6e12; }
  double utilization() const { return analyzer::utilization_ratio(busy_ns, span_ns); }
};

// The sharing panel's state: plans already recorded (lane_plans) and the plan the sharer's
// planner makes now from the analyzer's consolidation candidates.
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

struct SharingState {
  std::vector<StoredPlan> stored;
  std::vector<SharingEvent> events;  // oldest first
  bool events_truncated = false;     // more than kMaxSharingEvents in the database
  std::vector<analyzer::ConsolidationCandidate> candidates;
  std::vector<sharer::JobProfile> jobs;  // the candidates the planner can place
  sharer::ConsolidationPlan plan;
  std::vector<std::string> skipped;  // candidates left out, with the reason
};

struct SessionAnalysis {
  std::vector<CaptureAnalysis> captures;  // in Session::captures order
  std::vector<FleetRow> fleet;            // by wasted GPU-hours, largest first
  SharingState sharing;
};

// Loads and analyses every capture (fleet, findings, charts, sharing).
SessionAnalysis analyze_session(const Session& session, const Progress& progress = {},
                                const std::atomic<bool>* cancel = nullptr);

// The planner's job profile of a candidate (the same mapping as `fleetscope share plan DB`).
sharer::JobProfile job_profile(const analyzer::ConsolidationCandidate& c, const std::string& where);

}  // namespace fleetscope::gui
