// The main window: File menu (open, recent files, drag and drop, connect to a daemon, export the
// visible range), the fleet, capture, findings, sharing and SQL views, and the load progress with
// Cancel. Loading runs in the Loader's worker threads; errors become a dialog naming the file and
// the problem (or, when not interactive, last_error() for --screenshot and the tests).
#pragma once

#include <QMainWindow>
#include <memory>

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

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(bool interactive = true, std::unique_ptr<DaemonLink> daemon = nullptr);
  ~MainWindow() override;

  void open(const QString& path);
  // Processes events until the current load has finished, failed or was cancelled.
  bool wait_loaded(int timeout_ms = 60000);
  // "fleet", "timeline", "findings", "sharing", "daemon", "sql".
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
  QTabWidget* tabs() const { return tabs_; }
  SessionPtr session() const { return session_; }
  AnalysisPtr analysis() const { return analysis_; }

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
  void on_finding_selected(const store::Finding& finding);
  void export_visible_range();
  void connect_daemon();

  bool interactive_;
  std::unique_ptr<DaemonLink> daemon_;
  std::unique_ptr<Loader> loader_;
  int job_ = 0, capture_job_ = 0;
  bool loading_ = false;
  SessionPtr session_;
  AnalysisPtr analysis_;
  QString last_error_;
  QTabWidget* tabs_ = nullptr;
  FleetView* fleet_ = nullptr;
  CaptureView* capture_ = nullptr;
  FindingsPanel* findings_ = nullptr;
  SharingPanel* sharing_ = nullptr;
  SqlConsole* sql_ = nullptr;
  DaemonPanel* daemon_panel_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* progress_label_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QMenu* recent_ = nullptr;
};

}  // namespace fleetscope::gui
