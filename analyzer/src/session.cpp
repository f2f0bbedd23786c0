#include "fleetscope/analyzer/session.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "fleetscope/analyzer/loader.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/importers/open_input.h"
#include "fleetscope/store/error.h"

namespace fleetscope::analyzer {

std::unique_ptr<store::Reader> SessionSource::reader() const {
  if (keeper)
    return std::make_unique<store::Reader>(keeper->another_connection(store::OpenMode::read_only));
  return std::make_unique<store::Reader>(path);
}

namespace {

void check(const SessionCancel& cancel) {
  if (cancel) cancel();
}

}  // namespace

const SessionSource& AnalysisSession::open(const std::string& path, const SessionProgress& progress,
                                           const SessionCancel& cancel) {
  // A file already open (named again, or through a link) is that source: opened twice, each of
  // its jobs counted twice in the fleet (the GUI's "all.db alias.db") and planned beside itself.
  struct stat wanted {};
  if (::stat(path.c_str(), &wanted) == 0)
    for (const auto& open_source : sources_) {
      struct stat st {};
      if (::stat(open_source->path.c_str(), &st) == 0 && st.st_dev == wanted.st_dev &&
          st.st_ino == wanted.st_ino)
        return *open_source;
    }
  auto source = std::make_shared<SessionSource>();
  source->path = path;
  // The one dispatch every reading command uses (importers/open_input.h): a fleetscope database
  // as it is, a Kineto trace or an nsys export imported into memory with the indexes readers need.
  importers::ImportOptions options;
  options.progress_every_events = 50000;
  options.progress = [&](const importers::ImportProgress& p) {
    check(cancel);
    if (progress) progress("import", p.events);
  };
  importers::OpenedInput input = importers::open_input(path, options);
  check(cancel);
  source->format = importers::describe(input.kind);
  source->imported = input.imported();
  source->keeper = std::move(input.memory);
  std::unique_ptr<store::Reader> reader = source->reader();  // refuses a newer schema
  source->captures = reader->captures();
  source->workflows = reader->workflows();
  sources_.push_back(std::move(source));
  relabel();
  return *sources_.back();
}

void AnalysisSession::relabel() {
  // The file name, unless two sources share it: then the path as given keeps them apart.
  std::map<std::string, int> uses;
  for (const auto& s : sources_) ++uses[std::filesystem::path(s->path).filename().string()];
  for (auto& s : sources_) {
    const std::string name = std::filesystem::path(s->path).filename().string();
    s->label = uses[name] > 1 ? s->path : name;
  }
}

std::vector<CaptureRef> AnalysisSession::captures() const {
  std::vector<CaptureRef> out;
  for (size_t i = 0; i < sources_.size(); ++i)
    for (const auto& capture : sources_[i]->captures) out.push_back({{i, capture.id}, &capture});
  return out;
}

namespace {

std::shared_ptr<const CaptureAnalysis> without_data(const CaptureAnalysis& analysis) {
  auto copy = std::make_shared<CaptureAnalysis>(analysis);
  copy->data.reset();
  return copy;
}

}  // namespace

std::shared_ptr<const CaptureAnalysis> AnalysisSession::loaded(const CaptureKey& key,
                                                               const SessionCancel& cancel) {
  std::shared_ptr<const CaptureAnalysis> cached;  // kept without its events (set_keep_data)
  {
    std::lock_guard lock(cache_mutex_);
    if (auto it = cache_.find(key); it != cache_.end() && it->second.loaded) {
      if (it->second.loaded->data) return it->second.loaded;
      cached = it->second.loaded;
    }
  }
  if (key.source >= sources_.size())
    throw std::out_of_range("no source " + std::to_string(key.source) + " in the session");
  auto reader = sources_[key.source]->reader();
  auto result = std::make_shared<CaptureAnalysis>();
  result->key = key;
  auto data = std::make_shared<CaptureData>(
      load_capture(*reader, key.capture_id, [&](const std::string&, int64_t) { check(cancel); }));
  check(cancel);
  if (cached) {
    auto again = std::make_shared<CaptureAnalysis>(*cached);
    again->data = std::move(data);
    return again;
  }
  result->candidates = consolidation_candidates(*data, *reader);
  result->data = std::move(data);
  std::lock_guard lock(cache_mutex_);
  // Two threads may have loaded the same capture: the first one stored wins.
  auto& entry = cache_[key];
  if (!entry.loaded) entry.loaded = keep_data_ ? result : without_data(*result);
  return keep_data_ ? entry.loaded : result;
}

std::shared_ptr<const CaptureAnalysis> AnalysisSession::analysis(const CaptureKey& key,
                                                                 const SessionCancel& cancel) {
  {
    std::lock_guard lock(cache_mutex_);
    if (auto it = cache_.find(key); it != cache_.end() && it->second.analysed)
      return it->second.analysed;
  }
  auto base = loaded(key, cancel);
  auto result = std::make_shared<CaptureAnalysis>(*base);
  // The one rule for stored vs fresh findings (analysis.h): what `analyze` and `report` show.
  result->result = capture_findings(*result->data, sources_[key.source]->reader().get());
  std::lock_guard lock(cache_mutex_);
  auto& entry = cache_[key];
  if (!entry.analysed) entry.analysed = keep_data_ ? result : without_data(*result);
  return keep_data_ ? entry.analysed : result;
}

std::vector<ConsolidationCandidate> AnalysisSession::cached_candidates(
    const CaptureKey& key, const SessionCancel& cancel) {
  {
    std::lock_guard lock(cache_mutex_);
    if (auto it = cache_.find(key); it != cache_.end() && it->second.loaded)
      return it->second.loaded->candidates;
  }
  return loaded(key, cancel)->candidates;
}

std::vector<WorkflowWaste> AnalysisSession::fleet(const FleetProgress& progress) const {
  std::vector<std::string> names;
  for (const auto& s : sources_) names.push_back(s->label);
  return rank_sources(
      names, [&](size_t i) { return sources_[i]->reader(); }, progress);
}

std::vector<ConsolidationCandidate> AnalysisSession::candidates(const SessionCancel& cancel) {
  std::vector<ConsolidationCandidate> out;
  for (const auto& ref : captures()) {
    check(cancel);
    const auto part = cached_candidates(ref.key, cancel);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

sharer::JobProfile AnalysisSession::job_profile(const ConsolidationCandidate& c, size_t source,
                                                const sharer::MemoryModel& memory) const {
  const SessionSource& from = *sources_.at(source);
  const std::string capture = from.label + "#capture" + std::to_string(c.capture_id);
  const std::string device = "gpu" + std::to_string(c.device);
  sharer::JobProfile job;
  job.job_id = job_name(c) + "@" + capture + "/" + device;
  job.workflow = c.workflow;
  // One physical GPU, one name: its UUID when the trace has it; else, in the daemon's host
  // database (live captures), the host's device index; else (imported traces, which may come
  // from different machines) the capture's device.
  bool live = false;
  for (const auto& cap : from.captures)
    if (cap.id == c.capture_id) live = cap.kind != store::CaptureKind::imported;
  if (!c.gpu_uuid.empty())
    job.gpu = device + " " + c.gpu_uuid;
  else
    job.gpu = (live ? from.label : capture) + "/" + device;
  job.gpu += " (" + c.gpu_name + ")";
  job.persistent_bytes = c.persistent_bytes;
  // NVML's figure holds the process's CUDA context, which the memory model charges itself.
  if (c.memory_includes_context)
    job.persistent_bytes = std::max<int64_t>(0, job.persistent_bytes - memory.context_bytes);
  job.ephemeral_peak_bytes = c.ephemeral_peak_bytes;
  job.gpu_capacity_bytes = c.gpu_memory_bytes;
  job.utilization = c.utilization;
  job.iteration_ns = c.iteration_ns;
  job.iteration_p99_ns = c.iteration_p99_ns;
  // The analyzer's measured per-iteration variation of T (-1 when not measured: the sharer then
  // uses its prior).
  job.peak_stddev_bytes = c.ephemeral_peak_stddev_bytes;
  job.labels = c.labels;
  job.memory_evidence = c.memory_evidence + ": " + c.memory_evidence_detail;
  return job;
}

PlanInputs AnalysisSession::plan_inputs(const sharer::MemoryModel& memory,
                                        const SessionCancel& cancel) {
  PlanInputs inputs;
  for (const auto& ref : captures()) {
    check(cancel);
    for (const auto& c : cached_candidates(ref.key, cancel)) {
      inputs.candidates.push_back(c);
      inputs.candidate_sources.push_back(ref.key.source);
    }
  }
  for (size_t i = 0; i < inputs.candidates.size(); ++i) {
    const ConsolidationCandidate& c = inputs.candidates[i];
    // Without measured memory P = T = 0 would pass any safety check: such jobs cannot be placed.
    if (!c.memory_measured && c.memory_evidence != "declared") {
      inputs.skipped.push_back(job_name(c) + " on GPU " + std::to_string(c.device) +
                               ": P and T unknown (no memory events in the window, no NVML "
                               "figure from fleetscoped)");
      continue;
    }
    if (c.gpu_memory_bytes <= 0) {
      inputs.skipped.push_back(job_name(c) + " on GPU " + std::to_string(c.device) +
                               ": GPU capacity unknown");
      continue;
    }
    // The analyzer's verdict decides what may move: a busy job (or one whose memory fills its
    // GPU) keeps its GPU, so the plan never puts it in a shared lane (the GUI labels it "not a
    // candidate" and must not plan it; `share plan` says the same).
    if (!c.co_location_candidate) {
      inputs.skipped.push_back(job_name(c) + " on GPU " + std::to_string(c.device) +
                               ": not a candidate: " + c.reason);
      continue;
    }
    inputs.jobs.push_back(job_profile(c, inputs.candidate_sources[i], memory));
  }
  return inputs;
}

sharer::ConsolidationPlan AnalysisSession::plan(const sharer::PlannerOptions& options,
                                                const SessionCancel& cancel) {
  return sharer::plan_consolidation(plan_inputs(options.memory, cancel).jobs, options);
}

}  // namespace fleetscope::analyzer
