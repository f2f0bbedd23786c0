#include "loader.h"

#include <QPointer>
#include <mutex>

#include "fleetscope/store/database.h"
#include "fleetscope/store/error.h"
#include "timeline_cache.h"

namespace fleetscope::gui {

struct Loader::Job {
  int id = 0;
  std::atomic<bool> cancel{false};
};

namespace {

// The loader the store's migrated-copy notices go to (the latest one made), guarded so that no
// notice reaches a loader being destroyed: a notice comes from whichever thread opens a file
// (the loader's workers, the SQL console's).
std::mutex g_notice_mutex;
Loader* g_notice_loader = nullptr;

void forward_migrated_copy_notice(const store::MigratedCopyNotice& n) {
  std::lock_guard lock(g_notice_mutex);
  if (!g_notice_loader) return;
  Loader* loader = g_notice_loader;
  QMetaObject::invokeMethod(
      loader,
      [loader, path = QString::fromStdString(n.path), version = n.schema_version,
       stage = int(n.stage), done = n.done,
       total = n.total] { emit loader->migrating(path, version, stage, done, total); },
      Qt::QueuedConnection);
}

}  // namespace

Loader::Loader(QObject* parent) : QObject(parent) {
  {
    std::lock_guard lock(g_notice_mutex);
    g_notice_loader = this;
  }
  store::set_migrated_copy_listener(forward_migrated_copy_notice);
  qRegisterMetaType<SessionPtr>();
  qRegisterMetaType<TimelinePtr>();
  qRegisterMetaType<CaptureAnalysisPtr>();
  qRegisterMetaType<FleetPtr>();
  qRegisterMetaType<SharingPtr>();
  qRegisterMetaType<DiffPtr>();
  pool_.setMaxThreadCount(3);
}

Loader::~Loader() {
  {
    std::lock_guard lock(g_notice_mutex);
    if (g_notice_loader == this) g_notice_loader = nullptr;
  }
  cancel();
  pool_.waitForDone();
}

std::shared_ptr<Loader::Job> Loader::start_job() {
  auto job = std::make_shared<Job>();
  job->id = next_id_++;
  return job;
}

void Loader::cancel() {
  for (const auto& job : {current_, current_capture_, current_plan_, current_diff_, current_rank_})
    if (job) job->cancel = true;
}

bool Loader::busy() const {
  return pool_.activeThreadCount() > 0;
}

bool Loader::wait(int timeout_ms) {
  return pool_.waitForDone(timeout_ms);
}

namespace {

// Runs `fn` on the GUI thread unless the loader is gone.
template <class Fn>
void post(Loader* loader, Fn fn) {
  QMetaObject::invokeMethod(loader, std::move(fn), Qt::QueuedConnection);
}

}  // namespace

int64_t Loader::run_timeline(const std::shared_ptr<Job>& job, const SessionPtr& session,
                             const CaptureKey& key) {
  const int id = job->id;
  const int source = int(key.source);
  const std::string cache_base = session->cache_base(key.source);
  bool painted = false;
  if (!cache_base.empty()) {
    if (auto cached = load_timeline_cache(cache_base, key.capture_id)) {
      auto ptr = std::make_shared<const TimelineData>(std::move(*cached));
      post(this, [this, id, source, ptr] { emit timeline_ready(id, source, ptr, true); });
      painted = true;
    }
  }
  TimelineLoadOptions options;
  options.cancel = &job->cancel;
  options.progress = [this, id](const std::string& stage, int64_t rows) {
    post(this, [this, id, s = QString::fromStdString(stage), rows] { emit progress(id, s, rows); });
  };
  auto reader = session->reader(key.source);
  // No summary: a first part of a large capture is shown before the whole is read.
  if (!painted)
    if (auto head = load_timeline_head(*reader, key.capture_id, kFirstPartEvents, options)) {
      auto ptr = std::make_shared<const TimelineData>(std::move(*head));
      post(this, [this, id, source, ptr] { emit timeline_ready(id, source, ptr, false); });
    }
  auto timeline = std::make_shared<TimelineData>(load_timeline(*reader, key.capture_id, options));
  if (!cache_base.empty()) save_timeline_cache(cache_base, *timeline);
  TimelinePtr ptr = timeline;
  post(this, [this, id, source, ptr] { emit timeline_ready(id, source, ptr, false); });
  return timeline->event_count();
}

void Loader::run_analysis_if_small(const std::shared_ptr<Job>& job, const SessionPtr& session,
                                   const CaptureKey& key, int64_t events) {
  if (events <= auto_analysis_limit_) {
    run_analysis(job, session, key);
    return;
  }
  const int id = job->id;
  post(this, [this, id, key, events] {
    emit analysis_deferred(id, int(key.source), key.capture_id, events);
  });
}

void Loader::run_analysis(const std::shared_ptr<Job>& job, const SessionPtr& session,
                          const CaptureKey& key) {
  const int id = job->id;
  post(this, [this, id, s = QString::fromStdString("analysis of " + session->capture_label(key))] {
    emit progress(id, s, 0);
  });
  auto analysis =
      std::make_shared<const CaptureAnalysis>(analyze_capture(*session, key, &job->cancel));
  post(this, [this, id, analysis] { emit capture_analysis_ready(id, analysis); });
}

int Loader::open(const QStringList& paths) {
  cancel();
  auto job = start_job();
  current_ = job;
  current_capture_.reset();
  current_plan_.reset();
  current_diff_.reset();
  current_rank_.reset();
  const int id = job->id;
  std::vector<std::string> files;
  for (const QString& p : paths) files.push_back(p.toStdString());
  pool_.start([this, job, id, files, paths] {
    // The message names the file; with several, no one path is "the" file.
    const QString path = paths.size() == 1 ? paths.front() : QString();
    try {
      auto report = [this, id](const std::string& stage, int64_t n) {
        post(this, [this, id, s = QString::fromStdString(stage), n] { emit progress(id, s, n); });
      };
      auto session = open_session(files, report, &job->cancel);
      SessionPtr ptr = session;
      post(this, [this, id, ptr] { emit opened(id, ptr); });
      // The worst capture first: with several, the fleet ranking decides which.
      FleetPtr fleet;
      auto rank = [&] {
        post(this, [this, id] { emit progress(id, "fleet ranking", 0); });
        fleet = std::make_shared<const FleetRows>(session->analysis->fleet());
        post(this, [this, id, fleet] { emit fleet_ready(id, fleet); });
      };
      if (session->captures.size() > 1) rank();
      const auto first = most_wasteful_capture(*session, fleet ? *fleet : FleetRows{});
      if (job->cancel) throw LoadCancelled();
      if (first) run_analysis_if_small(job, ptr, *first, run_timeline(job, ptr, *first));
      post(this, [this, id] { emit finished(id); });
    } catch (const LoadCancelled&) {
      post(this, [this, id] { emit cancelled(id); });
    } catch (const std::exception& e) {
      post(this,
           [this, id, path, m = QString::fromStdString(e.what())] { emit failed(id, path, m); });
    }
  });
  return id;
}

int Loader::load_capture(SessionPtr session, CaptureKey key) {
  return start_capture_job(std::move(session), key,
                           [this](const auto& job, const auto& s, const auto& k) {
                             run_analysis_if_small(job, s, k, run_timeline(job, s, k));
                           });
}

int Loader::analyze(SessionPtr session, CaptureKey key) {
  return start_capture_job(
      std::move(session), key,
      [this](const auto& job, const auto& s, const auto& k) { run_analysis(job, s, k); });
}

// One capture job at a time: a new one cancels the previous; its end is reported as finished,
// cancelled or failed (naming the source's path).
int Loader::start_capture_job(SessionPtr session, CaptureKey key, CaptureWork work) {
  if (current_capture_) current_capture_->cancel = true;
  auto job = start_job();
  current_capture_ = job;
  const int id = job->id;
  pool_.start([this, job, id, session, key, work = std::move(work)] {
    try {
      work(job, session, key);
      post(this, [this, id] { emit finished(id); });
    } catch (const LoadCancelled&) {
      post(this, [this, id] { emit cancelled(id); });
    } catch (const std::exception& e) {
      post(this, [this, id, p = QString::fromStdString(session->source(key.source).path),
                  m = QString::fromStdString(e.what())] { emit failed(id, p, m); });
    }
  });
  return id;
}

int Loader::plan(SessionPtr session, WhatIf what_if) {
  if (current_plan_) current_plan_->cancel = true;
  auto job = start_job();
  current_plan_ = job;
  const int id = job->id;
  pool_.start([this, job, id, session, what_if] {
    try {
      post(this, [this, id] { emit progress(id, "consolidation plan", 0); });
      auto sharing =
          std::make_shared<const SharingState>(plan_sharing(*session, what_if, &job->cancel));
      post(this, [this, id, sharing] { emit sharing_ready(id, sharing); });
      post(this, [this, id] { emit finished(id); });
    } catch (const LoadCancelled&) {
      post(this, [this, id] { emit cancelled(id); });
    } catch (const std::exception& e) {
      post(this, [this, id, m = QString::fromStdString(e.what())] {
        emit failed(id, "consolidation plan", m);
      });
    }
  });
  return id;
}

int Loader::diff(SessionPtr session, CaptureKey before, CaptureKey after) {
  if (current_diff_) current_diff_->cancel = true;
  auto job = start_job();
  current_diff_ = job;
  const int id = job->id;
  pool_.start([this, job, id, session, before, after] {
    try {
      post(this, [this, id] { emit progress(id, "comparing captures", 0); });
      auto diff = std::make_shared<const analyzer::CaptureDiff>(
          compare_captures(*session, before, after, &job->cancel));
      post(this, [this, id, diff] { emit diff_ready(id, diff); });
      post(this, [this, id] { emit finished(id); });
    } catch (const LoadCancelled&) {
      post(this, [this, id] { emit cancelled(id); });
    } catch (const std::exception& e) {
      post(this, [this, id, m = QString::fromStdString(e.what())] {
        emit failed(id, "capture diff", m);
      });
    }
  });
  return id;
}

int Loader::rank(SessionPtr session) {
  if (current_rank_) current_rank_->cancel = true;
  auto job = start_job();
  current_rank_ = job;
  const int id = job->id;
  pool_.start([this, job, id, session] {
    try {
      post(this, [this, id] { emit progress(id, "fleet ranking", 0); });
      auto fleet = std::make_shared<const FleetRows>(session->analysis->fleet());
      if (job->cancel) throw LoadCancelled();
      post(this, [this, id, fleet] { emit fleet_ready(id, fleet); });
      post(this, [this, id] { emit finished(id); });
    } catch (const LoadCancelled&) {
      post(this, [this, id] { emit cancelled(id); });
    } catch (const std::exception& e) {
      post(this, [this, id, m = QString::fromStdString(e.what())] {
        emit failed(id, "fleet ranking", m);
      });
    }
  });
  return id;
}

}  // namespace fleetscope::gui
