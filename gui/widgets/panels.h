// The fleet, findings, sharing and SQL panels of the main window. Each shows a model from the
// core library and forwards the user's choices as signals; none computes anything itself.
#pragma once

#include <QMessageBox>
#include <QPointer>
#include <QThreadPool>
#include <QWidget>
#include <memory>
#include <optional>

#include "daemon_link.h"
#include "daemon_models.h"
#include "finding_evidence.h"
#include "loader.h"
#include "models.h"
#include "tree_model.h"

class QLineEdit;
class QTableView;
class QTextBrowser;
class QLabel;
class QPushButton;
class QPlainTextEdit;
class QSortFilterProxyModel;
class QTreeView;
class QTimer;

namespace fleetscope::gui {

class FleetView : public QWidget {
  Q_OBJECT
 public:
  explicit FleetView(QWidget* parent = nullptr);
  void set_rows(std::vector<FleetRow> rows);
  FleetModel* model() const { return model_; }
  QSortFilterProxyModel* proxy() const { return proxy_; }
  QTableView* table() const { return table_; }
  QLineEdit* filter() const { return filter_; }
  QLabel* totals() const { return totals_; }

 signals:
  void workflow_activated(QString workflow, std::vector<int64_t> capture_ids);

 private:
  QLabel* totals_ = nullptr;
  FleetModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  QLineEdit* filter_;
};

// The capture's findings by impact; below, the selected finding's recommendation, its evidence
// as readable rows (times from the capture start), and its offending events as a table.
// Selecting a finding (click, arrows, or the focus landing on the table) only highlights it on
// the timeline behind the tab; Enter or a double-click on it (or on one of its events) goes to the
// timeline. A click on an event row shows that event on the timeline.
class FindingsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit FindingsPanel(QWidget* parent = nullptr);
  void set_analysis(const CaptureAnalysis* analysis);
  // The timeline the offending events are found on (raw events needed; the panel refreshes
  // the selected finding when they arrive).
  void set_timeline(TimelinePtr timeline);
  FindingsModel* model() const { return model_; }
  QTableView* table() const { return table_; }
  EvidenceModel* evidence_model() const { return evidence_; }
  QTableView* evidence_table() const { return evidence_table_; }
  QTextBrowser* details() const { return details_; }
  // The evidence of the selected finding (events located on the timeline).
  const FindingEvidence& evidence() const { return current_; }
  // Selects the row of the model (source row), as a click does.
  void select_row(int row);

 signals:
  void finding_selected(fleetscope::store::Finding finding);
  void finding_activated(fleetscope::store::Finding finding);
  // `go`: the user asked to see it (double-click, Enter), not only selected it.
  void event_requested(size_t track, qint64 event, bool go);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void show_row(const QModelIndex& current);
  const store::Finding* current_finding() const;
  void request_event(const QModelIndex& index, bool go);
  FindingsModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  QTextBrowser* details_;
  EvidenceModel* evidence_;
  QSortFilterProxyModel* evidence_proxy_;
  QTableView* evidence_table_;
  TimelinePtr timeline_;
  FindingEvidence current_;
};

class SharingPanel : public QWidget {
  Q_OBJECT
 public:
  SharingPanel(DaemonLink& daemon, QWidget* parent = nullptr);
  void set_state(const SharingState* state);
  void refresh_daemon_state();
  SharingModel* model() const { return model_; }
  PlanJobsModel* jobs_model() const { return jobs_; }
  CandidatesModel* candidates_model() const { return candidates_; }
  StoredPlansModel* stored_model() const { return stored_; }
  SharingEventsModel* events_model() const { return events_; }
  QPushButton* apply_button() const { return apply_; }
  QLabel* apply_reason() const { return reason_; }
  // The open confirmation of Apply (null when none): Apply checks that the plan's GPUs are the
  // connected host's, then asks, listing what will change; only its Apply button sends the plan.
  QMessageBox* confirmation() const { return confirmation_; }

 private:
  void request_apply();
  DaemonLink& daemon_;
  QPointer<QMessageBox> confirmation_;
  const SharingState* state_ = nullptr;
  SharingModel* model_;
  PlanJobsModel* jobs_;
  CandidatesModel* candidates_;
  QTableView* candidates_table_;
  StoredPlansModel* stored_;
  SharingEventsModel* events_;
  QTableView* events_table_;
  QTreeView* tree_;
  QLabel* summary_;
  QLabel* reason_;
  QPushButton* apply_;
};

// The connected daemon's status: its agents, GPUs and open trace windows, with Refresh (asks the
// daemon again). Shows why when no daemon is connected or it cannot be reached.
class DaemonPanel : public QWidget {
  Q_OBJECT
 public:
  explicit DaemonPanel(DaemonLink& daemon, QWidget* parent = nullptr);
  // Asks the daemon for its status and shows it; false (and the reason shown) when it cannot.
  bool refresh();
  QLabel* summary() const { return summary_; }
  DaemonAgentsModel* agents_model() const { return agents_; }
  DaemonDevicesModel* devices_model() const { return devices_; }
  DaemonWindowsModel* windows_model() const { return windows_; }

 private:
  DaemonLink& daemon_;
  QLabel* summary_;
  DaemonAgentsModel* agents_;
  DaemonDevicesModel* devices_;
  DaemonWindowsModel* windows_;
};

// A read-only SQL console over the open database. A query runs on a worker thread with its own
// read-only connection, so the window stays responsive; Cancel or the timeout (30 s by default)
// interrupts it (sqlite3_interrupt), and the status line says which.
class SqlConsole : public QWidget {
  Q_OBJECT
 public:
  explicit SqlConsole(QWidget* parent = nullptr);
  ~SqlConsole() override;
  void set_session(SessionPtr session);
  // Starts `sql` (interrupting a query still running); the result arrives in the table.
  void start(const QString& sql);
  // start() and wait for the answer (tests, --screenshot): false (and the error shown) on error.
  bool run(const QString& sql);
  bool running() const { return current_ != nullptr; }
  void cancel();
  void set_timeout_ms(int ms) { timeout_ms_ = ms; }
  SqlResultModel* model() const { return model_; }
  QPushButton* run_button() const { return run_button_; }
  QPushButton* cancel_button() const { return cancel_button_; }
  QLabel* status() const { return status_; }
  QString error() const;

 signals:
  void finished(bool ok);

 private:
  struct Query;
  void finish(const std::shared_ptr<Query>& query, std::optional<store::QueryResult> result,
              QString error);
  SessionPtr session_;
  QPlainTextEdit* editor_;
  SqlResultModel* model_;
  QLabel* status_;
  QPushButton* run_button_;
  QPushButton* cancel_button_;
  QTimer* timeout_;
  int timeout_ms_ = 30'000;
  std::shared_ptr<Query> current_;
  QThreadPool pool_;  // one worker; the destructor waits for it
};

}  // namespace fleetscope::gui

Q_DECLARE_METATYPE(fleetscope::store::Finding)
