// Background loading with job ids, cancellation and staged results (the pattern of hotspot's
// parser): open() starts a job that opens or imports the files, then, in stages, delivers the
// session, with several captures the fleet ranking (which picks the capture to show first), the
// first capture's timeline (first from the zoom cache when there is one, else a first part of a
// large capture, then with all its raw events), and that capture's analysis. Other captures are
// analysed when they are shown (load_capture), the sharing plan when it is asked for (plan): the
// analysis session caches each capture's analysis. Each stage arrives as a queued signal carrying
// the job id; results of a job that was superseded or cancelled are dropped. Destroying the loader
// cancels the jobs and waits for the worker threads, so closing the window during a load is safe.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <QThreadPool>
#include <atomic>
#include <functional>
#include <memory>

#include "session.h"
#include "timeline_data.h"

namespace fleetscope::gui {

using SessionPtr = std::shared_ptr<const Session>;
using TimelinePtr = std::shared_ptr<const TimelineData>;
using CaptureAnalysisPtr = std::shared_ptr<const CaptureAnalysis>;
using FleetPtr = std::shared_ptr<const FleetRows>;
using SharingPtr = std::shared_ptr<const SharingState>;
using DiffPtr = std::shared_ptr<const analyzer::CaptureDiff>;

class Loader : public QObject {
  Q_OBJECT
 public:
  explicit Loader(QObject* parent = nullptr);
  ~Loader() override;

  // Starts a new job (cancelling the current one) on one or more files or folders; returns its id.
  int open(const QStringList& paths);
  int open(const QString& path) { return open(QStringList{path}); }
  // Loads another capture's timeline and analysis of the current session (a job of its own).
  int load_capture(SessionPtr session, CaptureKey key);
  // Plans the session's candidates with the host's settings changed by `what_if` (a job of its
  // own; a newer plan request cancels an older one).
  int plan(SessionPtr session, WhatIf what_if);
  // Ranks the session's jobs (`fleetscope fleet`; a job of its own: open() ranks only when the
  // ranking picks the capture to show first, i.e. with several captures).
  int rank(SessionPtr session);
  // Compares two captures of the session (`fleetscope diff`; a job of its own).
  int diff(SessionPtr session, CaptureKey before, CaptureKey after);
  // Analyses a capture whose analysis open() / load_capture() left to the user (a job of its own).
  int analyze(SessionPtr session, CaptureKey key);
  // open() and load_capture() analyse a capture by themselves only up to this many timeline
  // events: the analyzer holds every event of the capture in memory while it runs (the GUI with
  // 10 M kernels open and analysed peaks at 1.17 GB, docs/benchmarks.md "Analyzer memory"), so a
  // larger one waits for the user's Analyze (analysis_deferred) and opening it stays within the
  // timeline's own memory.
  static constexpr int64_t kAutoAnalysisMaxEvents = 2'000'000;
  void set_auto_analysis_limit(int64_t events) { auto_analysis_limit_ = events; }
  void cancel();
  bool busy() const;
  // Waits until the workers are idle (tests, --screenshot); false on timeout.
  bool wait(int timeout_ms = -1);
  // Events per table in the first part of a capture without a zoom summary (load_timeline_head).
  static constexpr int64_t kFirstPartEvents = 200'000;

 signals:
  void progress(int job, QString stage, qint64 done);
  void opened(int job, fleetscope::gui::SessionPtr session);
  // summary_only: from the zoom cache, raw events still loading. Without a cache, a large
  // capture first arrives as its first part (TimelineData::loaded_until), then whole. `source`:
  // the session source the capture is in.
  void timeline_ready(int job, int source, fleetscope::gui::TimelinePtr timeline,
                      bool summary_only);
  void fleet_ready(int job, fleetscope::gui::FleetPtr fleet);
  void capture_analysis_ready(int job, fleetscope::gui::CaptureAnalysisPtr analysis);
  // The capture (session source, capture id) was not analysed: `events` is over the limit.
  void analysis_deferred(int job, int source, qint64 capture_id, qint64 events);
  void sharing_ready(int job, fleetscope::gui::SharingPtr sharing);
  void diff_ready(int job, fleetscope::gui::DiffPtr diff);
  // A file of an older schema is read through a migrated copy (Database::open): `stage` 0 says so
  // once per file, 1 while the copy is made (`done` of `total` pages), 2 while it is migrated.
  // Reported from any thread of the process that opens the file, while this loader lives.
  void migrating(QString path, int schema_version, int stage, qint64 done, qint64 total);
  void failed(int job, QString path, QString message);
  void cancelled(int job);
  void finished(int job);

 private:
  struct Job;
  std::shared_ptr<Job> start_job();
  using CaptureWork =
      std::function<void(const std::shared_ptr<Job>&, const SessionPtr&, const CaptureKey&)>;
  int start_capture_job(SessionPtr session, CaptureKey key, CaptureWork work);
  // Returns the capture's timeline event count.
  int64_t run_timeline(const std::shared_ptr<Job>& job, const SessionPtr& session,
                       const CaptureKey& key);
  // Analyses the capture, or says it waits for the user (auto_analysis_limit_).
  void run_analysis_if_small(const std::shared_ptr<Job>& job, const SessionPtr& session,
                             const CaptureKey& key, int64_t events);
  void run_analysis(const std::shared_ptr<Job>& job, const SessionPtr& session,
                    const CaptureKey& key);
  QThreadPool pool_;
  std::shared_ptr<Job> current_;
  std::shared_ptr<Job> current_capture_;
  std::shared_ptr<Job> current_plan_;
  std::shared_ptr<Job> current_diff_;
  std::shared_ptr<Job> current_rank_;
  int next_id_ = 1;
  std::atomic<int64_t> auto_analysis_limit_{kAutoAnalysisMaxEvents};
};

}  // namespace fleetscope::gui

Q_DECLARE_METATYPE(fleetscope::gui::SessionPtr)
Q_DECLARE_METATYPE(fleetscope::gui::TimelinePtr)
Q_DECLARE_METATYPE(fleetscope::gui::CaptureAnalysisPtr)
Q_DECLARE_METATYPE(fleetscope::gui::FleetPtr)
Q_DECLARE_METATYPE(fleetscope::gui::SharingPtr)
Q_DECLARE_METATYPE(fleetscope::gui::DiffPtr)
