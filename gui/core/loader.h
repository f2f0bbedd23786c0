// Background loading with job ids, cancellation and staged results (the pattern of hotspot's
// parser): open() starts a job that opens or imports the file, then, in stages, delivers the
// session, the selected capture's timeline (first from the zoom cache when there is one, then
// with its raw events), and the analysis of every capture. Each stage arrives as a queued signal
// carrying the job id; results of a job that was superseded or cancelled are dropped. Destroying
// the loader cancels the jobs and waits for the worker threads, so closing the window during a
// load is safe.
#pragma once

#include <QObject>
#include <QString>
#include <QThreadPool>
#include <atomic>
#include <memory>

#include "session.h"
#include "timeline_data.h"

namespace fleetscope::gui {

using SessionPtr = std::shared_ptr<const Session>;
using TimelinePtr = std::shared_ptr<const TimelineData>;
using AnalysisPtr = std::shared_ptr<const SessionAnalysis>;

class Loader : public QObject {
  Q_OBJECT
 public:
  explicit Loader(QObject* parent = nullptr);
  ~Loader() override;

  // Starts a new job (cancelling the current one); returns its id.
  int open(const QString& path);
  // Loads another capture's timeline of the current session (a job of its own).
  int load_capture(SessionPtr session, int64_t capture_id);
  void cancel();
  bool busy() const;
  // Events per table in the first part of a capture without a zoom summary (load_timeline_head).
  static constexpr int64_t kFirstPartEvents = 200'000;
  // Waits until the workers are idle (tests, --screenshot); false on timeout.
  bool wait(int timeout_ms = -1);

 signals:
  void progress(int job, QString stage, qint64 done);
  void opened(int job, fleetscope::gui::SessionPtr session);
  // summary_only: from the zoom cache, raw events still loading. Without a cache, a large
  // capture first arrives as its first part (TimelineData::loaded_until), then whole.
  void timeline_ready(int job, fleetscope::gui::TimelinePtr timeline, bool summary_only);
  void analysis_ready(int job, fleetscope::gui::AnalysisPtr analysis);
  void failed(int job, QString path, QString message);
  void cancelled(int job);
  void finished(int job);

 private:
  struct Job;
  std::shared_ptr<Job> start_job();
  void run_timeline(const std::shared_ptr<Job>& job, const SessionPtr& session, int64_t capture);
  QThreadPool pool_;
  std::shared_ptr<Job> current_;
  std::shared_ptr<Job> current_capture_;
  int next_id_ = 1;
};

}  // namespace fleetscope::gui

Q_DECLARE_METATYPE(fleetscope::gui::SessionPtr)
Q_DECLARE_METATYPE(fleetscope::gui::TimelinePtr)
Q_DECLARE_METATYPE(fleetscope::gui::AnalysisPtr)
