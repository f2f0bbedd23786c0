#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDragEnterEvent>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>

#include "capture_view.h"
#include "daemon_client.h"
#include "panels.h"
#include "range_export.h"
#include "timeline_widget.h"

namespace fleetscope::gui {

MainWindow::MainWindow(bool interactive, std::unique_ptr<DaemonLink> daemon)
    : interactive_(interactive),
      daemon_(daemon ? std::move(daemon) : std::make_unique<DaemonClient>()),
      loader_(std::make_unique<Loader>()) {
  setWindowTitle("fleetscope");
  setAcceptDrops(true);
  tabs_ = new QTabWidget(this);
  fleet_ = new FleetView(tabs_);
  capture_ = new CaptureView(tabs_);
  findings_ = new FindingsPanel(tabs_);
  sharing_ = new SharingPanel(*daemon_, tabs_);
  diff_ = new DiffView(tabs_);
  daemon_panel_ = new DaemonPanel(*daemon_, tabs_);
  sql_ = new SqlConsole(tabs_);
  tabs_->addTab(fleet_, "Fleet");
  tabs_->addTab(capture_, "Timeline");
  tabs_->addTab(findings_, "Findings");
  tabs_->addTab(sharing_, "Sharing");
  tabs_->addTab(diff_, "Diff");
  tabs_->addTab(daemon_panel_, "Daemon");
  tabs_->addTab(sql_, "SQL");
  setCentralWidget(tabs_);

  progress_ = new QProgressBar(this);
  progress_->setRange(0, 0);
  progress_->setMaximumWidth(160);
  progress_label_ = new QLabel(this);
  cancel_ = new QPushButton("Cancel", this);
  statusBar()->addWidget(progress_label_, 1);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_);
  progress_->setVisible(false);
  cancel_->setVisible(false);
  build_menus();

  Loader* l = loader_.get();
  connect(cancel_, &QPushButton::clicked, this, &MainWindow::cancel_load);
  connect(l, &Loader::progress, this, [this](int job, const QString& stage, qint64 done) {
    if (active_.count(job))
      progress_label_->setText(done ? QString("%1: %2 rows").arg(stage).arg(done) : stage + "…");
  });
  connect(l, &Loader::opened, this, [this](int job, SessionPtr session) {
    if (job != job_) return;
    session_ = session;
    fleet_rows_.reset();
    analyses_.clear();
    plan_requested_ = false;
    // With several captures the open job ranks the jobs (to show the worst capture first);
    // with one, the ranking waits for the Fleet tab.
    fleet_requested_ = session->captures.size() > 1;
    capture_->set_session(session);
    sql_->set_session(session);
    fleet_->set_session(session);
    diff_->set_session(session);
    findings_->set_analysis(nullptr);
    sharing_->set_state(nullptr);
    setWindowTitle("fleetscope — " + QString::fromStdString(session->title()));
    if (session->captures.empty()) {
      const QString text =
          QString::fromStdString(session->sources().size() == 1 ? session->source(0).label
                                                                : session->title()) +
          (session->sources().size() == 1 ? " has" : " have") +
          " no captures: it holds no recorded tracing window to show.";
      capture_->timeline()->set_placeholder(text);
      progress_label_->setText(text);
    }
    // The plan is made when the Sharing tab is shown (it reads every capture's candidates).
    if (tabs_->currentWidget() == sharing_) request_plan();
    if (tabs_->currentWidget() == fleet_ && !fleet_requested_) request_fleet();
  });
  connect(l, &Loader::timeline_ready, this,
          [this](int job, int source, TimelinePtr timeline, bool) {
            if (job != job_ && job != capture_job_) return;
            capture_->set_timeline(timeline, size_t(source));
            findings_->set_timeline(timeline);
            show_capture_analysis();
          });
  connect(l, &Loader::fleet_ready, this, [this](int job, FleetPtr fleet) {
    if (job != job_ && job != fleet_job_) return;
    fleet_rows_ = fleet;
    fleet_->set_rows(*fleet);
  });
  connect(l, &Loader::analysis_deferred, this,
          [this](int job, int source, qint64 capture_id, qint64 events) {
            if (job != job_ && job != capture_job_) return;
            if (capture_->capture_key() != std::optional<CaptureKey>({size_t(source), capture_id}))
              return;
            findings_->show_deferred(events);
          });
  connect(findings_, &FindingsPanel::analysis_requested, this, [this] {
    const auto key = capture_->capture_key();
    if (!session_ || !key) return;
    if (analysis_job_) active_.erase(analysis_job_);
    analysis_job_ = loader_->analyze(session_, *key);
    job_started(analysis_job_,
                "Analysing " + QString::fromStdString(session_->capture_label(*key)) + "…");
  });
  connect(l, &Loader::capture_analysis_ready, this, [this](int job, CaptureAnalysisPtr analysis) {
    if (job != job_ && job != capture_job_ && job != analysis_job_) return;
    analyses_[analysis->key] = analysis;
    show_capture_analysis();
  });
  connect(l, &Loader::sharing_ready, this, [this](int job, SharingPtr sharing) {
    if (job != plan_job_) return;
    sharing_->set_state(sharing);
  });
  connect(l, &Loader::diff_ready, this, [this](int job, DiffPtr diff) {
    if (job != diff_job_) return;
    diff_->set_diff(diff);
  });
  connect(
      l, &Loader::migrating, this,
      [this](const QString& path, int version, int stage, qint64 done, qint64 total) {
        older_files_[path] = version;
        const QString name = QFileInfo(path).fileName();
        const QString upgrade = QString("`fleetscope migrate %1` upgrades the file once").arg(path);
        if (stage == 1 && total > 0 && done < total) {
          // Made once per content of the file; later opens read the kept copy.
          progress_->setVisible(true);
          progress_->setRange(0, 100);
          progress_->setValue(int(done * 100 / total));
          progress_label_->setText(QString("%1 is schema %2: making a migrated copy once, %3%; %4")
                                       .arg(name)
                                       .arg(version)
                                       .arg(done * 100 / total)
                                       .arg(upgrade));
          return;
        }
        // Copied (then migrated) or announced: the bar is the jobs' again (a connection opened
        // outside a job, the SQL console's, leaves none behind).
        progress_->setRange(0, 0);
        progress_->setVisible(!active_.empty());
        progress_label_->setText(QString(stage == 0 ? "%1 is schema %2: reading a migrated copy; %3"
                                                    : "%1 is schema %2: migrating the copy…; %3")
                                     .arg(name)
                                     .arg(version)
                                     .arg(upgrade));
      });
  connect(l, &Loader::failed, this, [this](int job, const QString& path, const QString& message) {
    if (!active_.count(job)) return;
    job_ended(job);
    fail(path, message);
    if (active_.empty()) emit load_done(false);
  });
  connect(l, &Loader::cancelled, this, [this](int job) {
    if (!active_.count(job)) return;
    job_ended(job);
    progress_label_->setText("Loading cancelled.");
    if (active_.empty()) emit load_done(false);
  });
  connect(l, &Loader::finished, this, [this](int job) {
    if (!active_.count(job)) return;
    job_ended(job);
    if (active_.empty()) {
      progress_label_->setText("Ready." + older_files_note());
      emit load_done(last_error_.isEmpty());
    }
  });
  connect(fleet_, &FleetView::workflow_activated, this,
          [this](const QString&, const std::vector<CaptureKey>& keys) {
            capture_->set_captures_filter(keys);
            if (!keys.empty()) load_capture(keys.front());
            tabs_->setCurrentWidget(capture_);
          });
  connect(capture_, &CaptureView::capture_requested, this, [this](int index) {
    if (session_ && index >= 0 && size_t(index) < session_->captures.size())
      load_capture(session_->captures[size_t(index)]);
  });
  connect(tabs_, &QTabWidget::currentChanged, this, [this] {
    if (tabs_->currentWidget() == sharing_ && !plan_requested_) request_plan();
    if (tabs_->currentWidget() == fleet_ && !fleet_requested_) request_fleet();
  });
  connect(sharing_, &SharingPanel::what_if_changed, this, &MainWindow::request_plan);
  connect(diff_, &DiffView::compare_requested, this,
          [this](const CaptureKey& before, const CaptureKey& after) {
            if (!session_) return;
            diff_job_ = loader_->diff(session_, before, after);
            job_started(diff_job_, "Comparing captures…");
          });
  connect(findings_, &FindingsPanel::finding_selected, this, &MainWindow::on_finding_selected);
  // Only an explicit request leaves the Findings tab (selecting, or the focus landing on the
  // table, marks the finding on the timeline behind it).
  connect(findings_, &FindingsPanel::finding_activated, this, [this](const store::Finding& f) {
    on_finding_selected(f);
    tabs_->setCurrentWidget(capture_);
  });
  connect(findings_, &FindingsPanel::event_requested, this,
          [this](size_t track, qint64 event, bool go) {
            capture_->timeline()->reveal_event(track, event);
            if (go) tabs_->setCurrentWidget(capture_);
          });
}

QString MainWindow::older_files_note() const {
  if (!session_) return {};
  QString note;
  for (const auto& source : session_->sources()) {
    const auto it = older_files_.find(QString::fromStdString(source->path));
    if (it == older_files_.end()) continue;
    note += QString(
                " %1 is schema %2, read through a migrated copy: `fleetscope migrate %3` "
                "upgrades it once.")
                .arg(QFileInfo(it->first).fileName())
                .arg(it->second)
                .arg(it->first);
  }
  return note;
}

void MainWindow::job_started(int job, const QString& text) {
  active_.insert(job);
  progress_->setVisible(true);
  cancel_->setVisible(true);
  if (!text.isEmpty()) progress_label_->setText(text);
}

void MainWindow::job_ended(int job) {
  active_.erase(job);
  progress_->setVisible(!active_.empty());
  cancel_->setVisible(!active_.empty());
}

void MainWindow::load_capture(const CaptureKey& key) {
  if (!session_) return;
  if (capture_job_) active_.erase(capture_job_);  // superseded: its results are dropped
  capture_job_ = loader_->load_capture(session_, key);
  job_started(capture_job_,
              "Loading " + QString::fromStdString(session_->capture_label(key)) + "…");
}

void MainWindow::request_plan() {
  if (!session_) return;
  plan_requested_ = true;
  if (plan_job_) active_.erase(plan_job_);
  plan_job_ = loader_->plan(session_, sharing_->what_if());
  job_started(plan_job_, "Planning consolidation…");
}

void MainWindow::request_fleet() {
  if (!session_) return;
  fleet_requested_ = true;
  fleet_job_ = loader_->rank(session_);
  job_started(fleet_job_, "Ranking jobs…");
}

CaptureAnalysisPtr MainWindow::analysis(const CaptureKey& key) const {
  auto it = analyses_.find(key);
  return it == analyses_.end() ? nullptr : it->second;
}

MainWindow::~MainWindow() {
  // Stop the workers before the widgets they report to go away.
  loader_.reset();
}

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("&Open…", QKeySequence::Open, this, [this] {
    // Several files open together (ranks of one job, hosts of a fleet).
    const QStringList paths = QFileDialog::getOpenFileNames(
        this, "Open traces", {}, "Traces (*.db *.sqlite *.json *.json.gz *.gz);;All files (*)");
    if (!paths.isEmpty()) open(paths);
  });
  file->addAction("Open &Folder…", this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, "Open the traces of a folder");
    if (!dir.isEmpty()) open(dir);
  });
  recent_ = file->addMenu("Open &Recent");
  update_recent_menu();
  file->addAction("&Connect to daemon…", this, &MainWindow::connect_daemon);
  file->addAction("&Export visible range as Chrome trace…", this,
                  &MainWindow::export_visible_range);
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);
  QMenu* view = menuBar()->addMenu("&View");
  view->addAction("&Back (zoom history)", QKeySequence(Qt::ALT | Qt::Key_Left), this,
                  [this] { capture_->timeline()->back(); });
  view->addAction("Show &all", QKeySequence(Qt::Key_0), this, [this] {
    capture_->timeline()->show_range(capture_->timeline()->view().bounds());
  });
}

void MainWindow::update_recent_menu() {
  recent_->clear();
  const QStringList files =
      QSettings("fleetscope", "fleetscope-gui").value("recent").toStringList();
  for (const QString& f : files) recent_->addAction(f, this, [this, f] { open(f); });
  recent_->setEnabled(!files.isEmpty());
}

void MainWindow::add_recent(const QString& path) {
  QSettings settings("fleetscope", "fleetscope-gui");
  QStringList files = settings.value("recent").toStringList();
  const QString absolute = QFileInfo(path).absoluteFilePath();
  files.removeAll(absolute);
  files.prepend(absolute);
  while (files.size() > 10) files.removeLast();
  settings.setValue("recent", files);
  update_recent_menu();
}

void MainWindow::open(const QStringList& paths) {
  last_error_.clear();
  for (const QString& path : paths) add_recent(path);
  active_.clear();
  capture_job_ = plan_job_ = diff_job_ = fleet_job_ = analysis_job_ = 0;
  job_ = loader_->open(paths);
  job_started(job_, paths.size() == 1 ? "Opening " + QFileInfo(paths.front()).fileName() + "…"
                                      : QString("Opening %1 files…").arg(paths.size()));
}

bool MainWindow::loading() const {
  return !active_.empty();
}

void MainWindow::cancel_load() {
  loader_->cancel();
}

bool MainWindow::wait_loaded(int timeout_ms) {
  QElapsedTimer timer;
  timer.start();
  while (!active_.empty() && timer.elapsed() < timeout_ms)
    QApplication::processEvents(QEventLoop::AllEvents | QEventLoop::WaitForMoreEvents, 50);
  QApplication::processEvents();
  return active_.empty() && last_error_.isEmpty();
}

bool MainWindow::show_view(const QString& name) {
  QWidget* w = name == "fleet"      ? static_cast<QWidget*>(fleet_)
               : name == "timeline" ? static_cast<QWidget*>(capture_)
               : name == "findings" ? static_cast<QWidget*>(findings_)
               : name == "sharing"  ? static_cast<QWidget*>(sharing_)
               : name == "diff"     ? static_cast<QWidget*>(diff_)
               : name == "daemon"   ? static_cast<QWidget*>(daemon_panel_)
               : name == "sql"      ? static_cast<QWidget*>(sql_)
                                    : nullptr;
  if (!w) return false;
  tabs_->setCurrentWidget(w);
  return true;
}

void MainWindow::fail(const QString& path, const QString& message) {
  // The store's and importers' messages already start with the file; say it once.
  last_error_ = path.isEmpty() || message.startsWith(path) ? message : path + ": " + message;
  progress_label_->setText("Failed: " + last_error_);
  if (interactive_)
    QMessageBox::critical(
        this, "Cannot open " + (path.isEmpty() ? QString("the files") : QFileInfo(path).fileName()),
        last_error_);
}

void MainWindow::show_capture_analysis() {
  const auto key = capture_->capture_key();
  CaptureAnalysisPtr found = key ? analysis(*key) : nullptr;
  capture_->set_analysis(found);
  findings_->set_analysis(found.get());
}

void MainWindow::on_finding_selected(const store::Finding& f) {
  TimelineWidget* t = capture_->timeline();
  if (!t->timeline()) return;
  // Its offending events are marked, and the view goes to the worst instance (the evidence's
  // focus) when there is one, else to the finding's window.
  const FindingEvidence& evidence = findings_->evidence();
  std::vector<EventRef> marked;
  for (const EvidenceEvent& e : evidence.events)
    if (e.track) marked.push_back({*e.track, e.event});
  t->set_marked_events(std::move(marked));
  std::optional<TimeRange> target = evidence.focus;
  if (f.window_start && f.window_end) {
    const TimeRange window{*f.window_start, std::max(*f.window_end, *f.window_start + 1)};
    t->set_highlights({evidence.focus ? *evidence.focus : window});
    if (!target) target = window;
  }
  if (!target) return;
  const int64_t margin = std::max<int64_t>(target->length() / 10, 1000);
  t->show_range({target->begin - margin, target->end + margin});
  if (!evidence.events.empty() && evidence.events.front().track)
    t->scroll_to_track(*evidence.events.front().track);
}

void MainWindow::export_visible_range() {
  const TimelineData* data = capture_->timeline()->timeline();
  if (!data || !data->has_events) return;
  const QString path = QFileDialog::getSaveFileName(this, "Export visible range", "range.json",
                                                    "Chrome trace (*.json)");
  if (path.isEmpty()) return;
  try {
    const int64_t n =
        export_range_chrome(*data, capture_->timeline()->view().visible(), path.toStdString());
    progress_label_->setText(QString("Exported %1 events to %2").arg(n).arg(path));
  } catch (const std::exception& e) {
    fail(path, e.what());
  }
}

void MainWindow::connect_daemon() {
  bool ok = false;
  const QString socket =
      QInputDialog::getText(this, "Connect to daemon", "fleetscoped socket:", QLineEdit::Normal,
                            "/run/fleetscope/fleetscoped.sock", &ok);
  if (!ok || socket.isEmpty()) return;
  connect_to_daemon(socket);
}

bool MainWindow::connect_to_daemon(const QString& socket) {
  std::string error;
  const bool connected = daemon_->connect(socket.toStdString(), error);
  if (!connected)
    fail(socket, QString::fromStdString(error));
  else {
    daemon_panel_->refresh();
    tabs_->setCurrentWidget(daemon_panel_);
  }
  sharing_->refresh_daemon_state();
  return connected;
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  // Every dropped file and folder, opened together.
  QStringList paths;
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile()) paths << url.toLocalFile();
  if (paths.isEmpty()) return;
  open(paths);
  event->acceptProposedAction();
}

void MainWindow::closeEvent(QCloseEvent* event) {
  loader_->cancel();
  event->accept();
}

}  // namespace fleetscope::gui
