// The main window: File menu (open one or several files or a folder, recent files, drag and drop,
// connect to a daemon, export the visible range), the fleet, capture, findings, sharing, diff and
// SQL views, and the load progress with Cancel. Loading runs in the Loader's worker threads; errors
// become a dialog naming the file and the problem (or, when not interactive, last_error() for
// --screenshot and the tests).
#pragma once

#include <QMainWindow>
#include <map>
#include <memory>
#include <set>

#include "daemon_link.h"
#include "loader.h"

class QTabWidget;
class QProgressBar;
class QLabel;
class QPushButton;
class QMenu;

namespace fleetscope::gui {

class CaptureView;
class FleetView;
class FindingsPanel;
class SharingPanel;
class SqlConsole;
class DaemonPanel;
class DiffView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(bool interactive = true, std::unique_ptr<DaemonLink> daemon = nullptr);
  ~MainWindow() override;

  // Opens files and folders together (one session: ranks of a job, hosts of a fleet).
  void open(const QStringList& paths);
  void open(const QString& path) { open(QStringList{path}); }
  // Processes events until the current load has finished, failed or was cancelled.
  bool wait_loaded(int timeout_ms = 60000);
  // "fleet", "timeline", "findings", "sharing", "diff", "daemon", "sql".
  bool show_view(const QString& name);
  QString last_error() const { return last_error_; }
  bool loading() const;
  void cancel_load();
  // Connects the daemon link to fleetscoped's socket and shows its status (the Daemon tab); a
  // failure is reported like a failed open (dialog when interactive, last_error()).
  bool connect_to_daemon(const QString& socket);

  Loader* loader() const { return loader_.get(); }
  CaptureView* capture_view() const { return capture_; }
  FleetView* fleet_view() const { return fleet_; }
  FindingsPanel* findings_panel() const { return findings_; }
  SharingPanel* sharing_panel() const { return sharing_; }
  SqlConsole* sql_console() const { return sql_; }
  DaemonPanel* daemon_panel() const { return daemon_panel_; }
  DiffView* diff_view() const { return diff_; }
  QTabWidget* tabs() const { return tabs_; }
  SessionPtr session() const { return session_; }
  FleetPtr fleet() const { return fleet_rows_; }
  // The analyses received so far (the analysis session analyses a capture when it is shown).
  CaptureAnalysisPtr analysis(const CaptureKey& key) const;

 signals:
  void load_done(bool ok);

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  void closeEvent(QCloseEvent* event) override;

 private:
  void build_menus();
  void update_recent_menu();
  void add_recent(const QString& path);
  void set_loading(bool on, const QString& text = {});
  void fail(const QString& path, const QString& message);
  void show_capture_analysis();
  void load_capture(const CaptureKey& key);
  void request_plan();
  void request_fleet();
  // Jobs in flight: the status bar shows progress and Cancel while any runs.
  void job_started(int job, const QString& text);
  void job_ended(int job);
  void on_finding_selected(const store::Finding& finding);
  void export_visible_range();
  void connect_daemon();

  bool interactive_;
  std::unique_ptr<DaemonLink> daemon_;
  std::unique_ptr<Loader> loader_;
  int job_ = 0, capture_job_ = 0, plan_job_ = 0, diff_job_ = 0, fleet_job_ = 0;
  int analysis_job_ = 0;
  std::set<int> active_;
  bool plan_requested_ = false, fleet_requested_ = false;
  SessionPtr session_;
  FleetPtr fleet_rows_;
  std::map<CaptureKey, CaptureAnalysisPtr> analyses_;
  QString last_error_;
  // Files of an older schema read through a migrated copy (Loader::migrating), by path: the
  // status line keeps saying that `fleetscope migrate` upgrades them once.
  std::map<QString, int> older_files_;
  QString older_files_note() const;
  QTabWidget* tabs_ = nullptr;
  FleetView* fleet_ = nullptr;
  CaptureView* capture_ = nullptr;
  FindingsPanel* findings_ = nullptr;
  SharingPanel* sharing_ = nullptr;
  SqlConsole* sql_ = nullptr;
  DaemonPanel* daemon_panel_ = nullptr;
  DiffView* diff_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* progress_label_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QMenu* recent_ = nullptr;
};

}  // namespace fleetscope::gui
