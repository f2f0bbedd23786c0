// One analysis session: what the CLI (`share plan DB...`, `candidates --format profiles`) and the
// GUI do with open databases and traces, written once. The daemon, which analyses one window as it
// closes, makes the two calls a session's analysis() makes (load_capture, then capture_findings:
// one rule for stored and fresh findings, the analysis cache kept in the database) without the
// session's in-memory cache of every capture, which a long-running process has no use for.
//
//   AnalysisSession session;
//   session.open("host.db");                    // a fleetscope database, or a Kineto JSON /
//   session.open("run.json.gz");                //   nsys SQLite file imported into memory
//   for (const CaptureRef& c : session.captures()) {
//     auto analysis = session.analysis(c.key);  // loaded and analysed once, then cached
//   }
//   auto ranking = session.fleet();             // analyzer/fleet.h's ranking over the sources
//   auto inputs = session.plan_inputs(memory);  // candidates -> the planner's job profiles
//   auto plan = session.plan(host_planning().options);
//
// Sources are read through new read-only connections (one per call), so the const members may
// run on several threads at once; analysis() is thread-safe and computes each capture once.
// Job and GPU names (job_profile()) use each source's label: its file name, or its path as given
// when two sources share a file name.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/capture_data.h"
#include "fleetscope/analyzer/consolidation.h"
#include "fleetscope/analyzer/fleet.h"
#include "fleetscope/sharer/job_profile.h"
#include "fleetscope/sharer/memory_model.h"
#include "fleetscope/sharer/planner.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::analyzer {

// Progress: (stage, count so far). Cancel: called between steps and while loading; it throws
// (the caller's own exception type) to abandon the work.
using SessionProgress = std::function<void(const std::string& stage, int64_t done)>;
using SessionCancel = std::function<void()>;

struct SessionSource {
  std::string path;       // as the user gave it
  std::string label;      // in job ids and GPU names (see above)
  std::string format;     // "fleetscope database", "Kineto JSON", "nsys SQLite export"
  bool imported = false;  // held in memory: nothing is written beside the file
  std::vector<store::Capture> captures;
  std::vector<store::Workflow> workflows;
  std::shared_ptr<store::Database> keeper;  // keeps an imported in-memory database alive

  // A new read-only connection.
  std::unique_ptr<store::Reader> reader() const;
};

struct CaptureKey {
  size_t source = 0;  // index into sources()
  int64_t capture_id = 0;
  auto operator<=>(const CaptureKey&) const = default;
};

struct CaptureRef {
  CaptureKey key;
  const store::Capture* capture = nullptr;  // owned by the session's source
};

struct CaptureAnalysis {
  CaptureKey key;
  std::shared_ptr<const CaptureData> data;
  // The analyzer's findings and rule outcomes under the one rule for stored vs fresh findings
  // (capture_findings(), analysis.h): analysed now, as `analyze` and `report` do; the stored
  // findings only for a capture with no rows left (result.source says which).
  AnalysisResult result;
  // The capture's consolidation candidates (trace evidence, then the host's NVML figures).
  std::vector<ConsolidationCandidate> candidates;
};

// The planner's inputs: every candidate, the job profiles of those it can place (the analyzer's
// co-location candidates with P, T and the GPU's capacity known), and why the others are left
// out ("job on GPU n: P and T unknown ...", "job on GPU n: not a candidate: GPU utilization 90 %").
struct PlanInputs {
  std::vector<ConsolidationCandidate> candidates;
  std::vector<size_t> candidate_sources;  // the source index of each candidate
  std::vector<sharer::JobProfile> jobs;
  std::vector<std::string> skipped;
};

class AnalysisSession {
 public:
  // Opens a database or imports a trace. Throws fleetscope::InputError naming the file and the
  // problem (not a trace, a newer schema, a corrupt file, a trace the importer rejects). A file
  // already open (named again, or through a link) is not opened twice: its source is returned.
  const SessionSource& open(const std::string& path, const SessionProgress& progress = {},
                            const SessionCancel& cancel = {});

  const std::vector<std::shared_ptr<SessionSource>>& sources() const { return sources_; }
  std::vector<CaptureRef> captures() const;

  // Loads and analyses one capture, once (later calls return the cached result).
  std::shared_ptr<const CaptureAnalysis> analysis(const CaptureKey& key,
                                                  const SessionCancel& cancel = {});
  // Loads one capture and finds its candidates without running the rules (`result` is empty);
  // cached like analysis(). What planning needs.
  std::shared_ptr<const CaptureAnalysis> loaded(const CaptureKey& key,
                                                const SessionCancel& cancel = {});

  // Jobs ranked by wasted GPU-hours over every source (analyzer/fleet.h).
  std::vector<WorkflowWaste> fleet(const FleetProgress& progress = {}) const;

  // Every capture's consolidation candidates, in capture order (PlanInputs::candidates).
  std::vector<ConsolidationCandidate> candidates(const SessionCancel& cancel = {});

  // Candidates as the planner's job profiles under `memory` (P of an NVML figure loses the
  // model's context, which the model charges itself).
  PlanInputs plan_inputs(const sharer::MemoryModel& memory, const SessionCancel& cancel = {});

  // The plan of plan_inputs(options.memory).jobs.
  sharer::ConsolidationPlan plan(const sharer::PlannerOptions& options,
                                 const SessionCancel& cancel = {});

  // false: the cache keeps each capture's candidates and analysis result but not its events
  // (CaptureAnalysis::data), so a GUI showing a 10 M-event capture does not hold the analyzer's
  // copy of it after the findings are made. loaded() then loads the events again when asked (not
  // kept), and a cached analysis() comes without them. Default true (the CLI's one-shot use).
  void set_keep_data(bool keep) { keep_data_ = keep; }

  // The planner's job profile of one candidate (the one mapping: `share plan DB`, `candidates
  // --format profiles`, the GUI).
  // `source`: the index of the candidate's source.
  sharer::JobProfile job_profile(const ConsolidationCandidate& candidate, size_t source,
                                 const sharer::MemoryModel& memory) const;

 private:
  void relabel();
  // The capture's candidates: cached (with or without its events), else loaded.
  std::vector<ConsolidationCandidate> cached_candidates(const CaptureKey& key,
                                                        const SessionCancel& cancel);
  bool keep_data_ = true;

  std::vector<std::shared_ptr<SessionSource>> sources_;
  struct CacheEntry {
    std::shared_ptr<const CaptureAnalysis> loaded;    // data + candidates
    std::shared_ptr<const CaptureAnalysis> analysed;  // and the rules' result
  };
  std::mutex cache_mutex_;
  std::map<CaptureKey, CacheEntry> cache_;
};

}  // namespace fleetscope::analyzer
