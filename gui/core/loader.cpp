#include "loader.h"

#include <QPointer>

#include "fleetscope/store/error.h"
#include "timeline_cache.h"

namespace fleetscope::gui {

struct Loader::Job {
  int id = 0;
  std::atomic<bool> cancel{false};
  std::atomic<int> running{0};
};

Loader::Loader(QObject* parent) : QObject(parent) {
  qRegisterMetaType<SessionPtr>();
  qRegisterMetaType<TimelinePtr>();
  qRegisterMetaType<AnalysisPtr>();
  pool_.setMaxThreadCount(2);
}

Loader::~Loader() {
  cancel();
  pool_.waitForDone();
}

std::shared_ptr<Loader::Job> Loader::start_job() {
  auto job = std::make_shared<Job>();
  job->id = next_id_++;
  return job;
}

void Loader::cancel() {
  if (current_) current_->cancel = true;
  if (current_capture_) current_capture_->cancel = true;
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

void Loader::run_timeline(const std::shared_ptr<Job>& job, const SessionPtr& session,
                          int64_t capture) {
  const int id = job->id;
  const std::string cache_base = session->cache_base();
  bool painted = false;
  if (!cache_base.empty()) {
    if (auto cached = load_timeline_cache(cache_base, capture)) {
      auto ptr = std::make_shared<const TimelineData>(std::move(*cached));
      post(this, [this, id, ptr] { emit timeline_ready(id, ptr, true); });
      painted = true;
    }
  }
  TimelineLoadOptions options;
  options.cancel = &job->cancel;
  options.progress = [this, id](const std::string& stage, int64_t rows) {
    post(this, [this, id, s = QString::fromStdString(stage), rows] { emit progress(id, s, rows); });
  };
  auto reader = session->reader();
  // No summary: a first part of a large capture is shown before the whole is read.
  if (!painted)
    if (auto head = load_timeline_head(*reader, capture, kFirstPartEvents, options)) {
      auto ptr = std::make_shared<const TimelineData>(std::move(*head));
      post(this, [this, id, ptr] { emit timeline_ready(id, ptr, false); });
    }
  auto timeline = std::make_shared<TimelineData>(load_timeline(*reader, capture, options));
  if (!cache_base.empty()) save_timeline_cache(cache_base, *timeline);
  TimelinePtr ptr = timeline;
  post(this, [this, id, ptr] { emit timeline_ready(id, ptr, false); });
}

int Loader::open(const QString& path) {
  cancel();
  auto job = start_job();
  current_ = job;
  current_capture_.reset();
  const int id = job->id;
  const std::string file = path.toStdString();
  pool_.start([this, job, id, file, path] {
    try {
      auto session = open_session(
          file,
          [this, id](const std::string& stage, int64_t n) {
            post(this,
                 [this, id, s = QString::fromStdString(stage), n] { emit progress(id, s, n); });
          },
          &job->cancel);
      SessionPtr ptr = session;
      post(this, [this, id, ptr] { emit opened(id, ptr); });
      if (!session->captures.empty()) run_timeline(job, ptr, session->captures.back().id);
      auto analysis = std::make_shared<const SessionAnalysis>(analyze_session(
          *session,
          [this, id](const std::string& stage, int64_t n) {
            post(this,
                 [this, id, s = QString::fromStdString(stage), n] { emit progress(id, s, n); });
          },
          &job->cancel));
      post(this, [this, id, analysis] { emit analysis_ready(id, analysis); });
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

int Loader::load_capture(SessionPtr session, int64_t capture_id) {
  if (current_capture_) current_capture_->cancel = true;
  auto job = start_job();
  current_capture_ = job;
  const int id = job->id;
  pool_.start([this, job, id, session, capture_id] {
    try {
      run_timeline(job, session, capture_id);
      post(this, [this, id] { emit finished(id); });
    } catch (const LoadCancelled&) {
      post(this, [this, id] { emit cancelled(id); });
    } catch (const std::exception& e) {
      post(this, [this, id, p = QString::fromStdString(session->source_path),
                  m = QString::fromStdString(e.what())] { emit failed(id, p, m); });
    }
  });
  return id;
}

}  // namespace fleetscope::gui
