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
  daemon_panel_ = new DaemonPanel(*daemon_, tabs_);
  sql_ = new SqlConsole(tabs_);
  tabs_->addTab(fleet_, "Fleet");
  tabs_->addTab(capture_, "Timeline");
  tabs_->addTab(findings_, "Findings");
  tabs_->addTab(sharing_, "Sharing");
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
  set_loading(false);
  build_menus();

  Loader* l = loader_.get();
  connect(cancel_, &QPushButton::clicked, this, &MainWindow::cancel_load);
  connect(l, &Loader::progress, this, [this](int job, const QString& stage, qint64 done) {
    if (job == job_ || job == capture_job_)
      progress_label_->setText(done ? QString("%1: %2 rows").arg(stage).arg(done) : stage + "…");
  });
  connect(l, &Loader::opened, this, [this](int job, SessionPtr session) {
    if (job != job_) return;
    session_ = session;
    analysis_.reset();
    capture_->set_session(session);
    sql_->set_session(session);
    fleet_->set_rows({});
    findings_->set_analysis(nullptr);
    sharing_->set_state(nullptr);
    setWindowTitle("fleetscope — " +
                   QFileInfo(QString::fromStdString(session->source_path)).fileName() + " (" +
                   QString::fromStdString(session->format) + ")");
    if (session->captures.empty()) {
      const QString text = QFileInfo(QString::fromStdString(session->source_path)).fileName() +
                           " has no captures: it holds no recorded tracing window to show.";
      capture_->timeline()->set_placeholder(text);
      progress_label_->setText(text);
    }
  });
  connect(l, &Loader::timeline_ready, this, [this](int job, TimelinePtr timeline, bool) {
    if (job != job_ && job != capture_job_) return;
    capture_->set_timeline(timeline);
    findings_->set_timeline(timeline);
    show_capture_analysis();
  });
  connect(l, &Loader::analysis_ready, this, [this](int job, AnalysisPtr analysis) {
    if (job != job_) return;
    analysis_ = analysis;
    fleet_->set_rows(analysis->fleet);
    capture_->set_analysis(analysis);
    sharing_->set_state(&analysis->sharing);
    show_capture_analysis();
  });
  connect(l, &Loader::failed, this, [this](int job, const QString& path, const QString& message) {
    if (job != job_ && job != capture_job_) return;
    set_loading(false);
    fail(path, message);
    emit load_done(false);
  });
  connect(l, &Loader::cancelled, this, [this](int job) {
    if (job != job_ && job != capture_job_) return;
    set_loading(false);
    progress_label_->setText("Loading cancelled.");
    emit load_done(false);
  });
  connect(l, &Loader::finished, this, [this](int job) {
    if (job != job_ && job != capture_job_) return;
    set_loading(false);
    progress_label_->setText("Ready.");
    emit load_done(true);
  });
  connect(fleet_, &FleetView::workflow_activated, this,
          [this](const QString&, const std::vector<int64_t>& ids) {
            capture_->set_captures_filter(ids);
            if (!ids.empty() && session_) {
              capture_job_ = loader_->load_capture(session_, ids.front());
              set_loading(true, "Loading capture…");
            }
            tabs_->setCurrentWidget(capture_);
          });
  connect(capture_, &CaptureView::capture_requested, this, [this](qint64 id) {
    if (!session_) return;
    capture_job_ = loader_->load_capture(session_, id);
    set_loading(true, "Loading capture…");
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

MainWindow::~MainWindow() {
  // Stop the workers before the widgets they report to go away.
  loader_.reset();
}

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("&Open…", QKeySequence::Open, this, [this] {
    const QString path = QFileDialog::getOpenFileName(
        this, "Open trace", {}, "Traces (*.db *.sqlite *.json *.json.gz *.gz);;All files (*)");
    if (!path.isEmpty()) open(path);
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

void MainWindow::open(const QString& path) {
  last_error_.clear();
  add_recent(path);
  capture_job_ = 0;
  job_ = loader_->open(path);
  set_loading(true, "Opening " + QFileInfo(path).fileName() + "…");
}

bool MainWindow::loading() const {
  return loading_;
}

void MainWindow::cancel_load() {
  loader_->cancel();
}

void MainWindow::set_loading(bool on, const QString& text) {
  loading_ = on;
  progress_->setVisible(on);
  cancel_->setVisible(on);
  if (!text.isEmpty()) progress_label_->setText(text);
}

bool MainWindow::wait_loaded(int timeout_ms) {
  QElapsedTimer timer;
  timer.start();
  while (loading_ && timer.elapsed() < timeout_ms)
    QApplication::processEvents(QEventLoop::AllEvents | QEventLoop::WaitForMoreEvents, 50);
  QApplication::processEvents();
  return !loading_ && last_error_.isEmpty();
}

bool MainWindow::show_view(const QString& name) {
  QWidget* w = name == "fleet"      ? static_cast<QWidget*>(fleet_)
               : name == "timeline" ? static_cast<QWidget*>(capture_)
               : name == "findings" ? static_cast<QWidget*>(findings_)
               : name == "sharing"  ? static_cast<QWidget*>(sharing_)
               : name == "daemon"   ? static_cast<QWidget*>(daemon_panel_)
               : name == "sql"      ? static_cast<QWidget*>(sql_)
                                    : nullptr;
  if (!w) return false;
  tabs_->setCurrentWidget(w);
  return true;
}

void MainWindow::fail(const QString& path, const QString& message) {
  // The store's and importers' messages already start with the file; say it once.
  last_error_ = message.startsWith(path) ? message : path + ": " + message;
  progress_label_->setText("Failed: " + last_error_);
  if (interactive_)
    QMessageBox::critical(this, "Cannot open " + QFileInfo(path).fileName(), last_error_);
}

void MainWindow::show_capture_analysis() {
  const auto id = capture_->capture_id();
  const CaptureAnalysis* found = nullptr;
  if (analysis_ && id)
    for (const auto& c : analysis_->captures)
      if (c.capture_id == *id) found = &c;
  findings_->set_analysis(found);
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
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile()) {
      open(url.toLocalFile());
      event->acceptProposedAction();
      return;
    }
}

void MainWindow::closeEvent(QCloseEvent* event) {
  loader_->cancel();
  event->accept();
}

}  // namespace fleetscope::gui
