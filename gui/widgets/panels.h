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

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
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

// The jobs of every open source ranked by wasted GPU-hours (the analysis session's fleet
// ranking), with the totals, and below, one row per open source (database or trace).
class FleetView : public QWidget {
  Q_OBJECT
 public:
  explicit FleetView(QWidget* parent = nullptr);
  void set_session(SessionPtr session);
  void set_rows(FleetRows rows);
  FleetModel* model() const { return model_; }
  SourcesModel* sources_model() const { return sources_; }
  QSortFilterProxyModel* proxy() const { return proxy_; }
  QTableView* table() const { return table_; }
  QLineEdit* filter() const { return filter_; }
  QLabel* totals() const { return totals_; }

 signals:
  void workflow_activated(QString workflow, std::vector<fleetscope::gui::CaptureKey> captures);

 private:
  SessionPtr session_;
  QLabel* totals_ = nullptr;
  FleetModel* model_;
  SourcesModel* sources_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  QLineEdit* filter_;
};

// `fleetscope diff` in the GUI: two captures of the open sources (before, after) and the change
// of their metrics and kernels.
class DiffView : public QWidget {
  Q_OBJECT
 public:
  explicit DiffView(QWidget* parent = nullptr);
  void set_session(SessionPtr session);
  void set_diff(DiffPtr diff);
  QComboBox* before() const { return before_; }
  QComboBox* after() const { return after_; }
  QPushButton* compare_button() const { return compare_; }
  MetricDeltaModel* metrics_model() const { return metrics_; }
  KernelDeltaModel* kernels_model() const { return kernels_; }
  QLabel* status() const { return status_; }

 signals:
  void compare_requested(fleetscope::gui::CaptureKey before, fleetscope::gui::CaptureKey after);

 private:
  SessionPtr session_;
  QComboBox* before_;
  QComboBox* after_;
  QPushButton* compare_;
  QLabel* status_;
  MetricDeltaModel* metrics_;
  KernelDeltaModel* kernels_;
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
  // Shown only when the findings are the stored ones (the capture has no rows left to analyse:
  // analyzer::capture_findings, the rule `report` follows too).
  QLabel* source_label() const { return source_; }
  // The evidence of the selected finding (events located on the timeline).
  const FindingEvidence& evidence() const { return current_; }
  // Selects the row of the model (source row), as a click does.
  void select_row(int row);
  // The capture shown was not analysed by itself (`events` over the loader's limit): says so,
  // with an Analyze button (analysis_requested). set_analysis() hides it.
  void show_deferred(int64_t events);
  QPushButton* analyze_button() const { return analyze_; }
  QLabel* deferred_label() const { return deferred_; }

 signals:
  void analysis_requested();
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
  QLabel* source_;
  QTableView* table_;
  QTextBrowser* details_;
  EvidenceModel* evidence_;
  QSortFilterProxyModel* evidence_proxy_;
  QTableView* evidence_table_;
  QLabel* deferred_;
  QPushButton* analyze_;
  TimelinePtr timeline_;
  FindingEvidence current_;
};

// The consolidation plan of the open sources, made as `fleetscope share plan` makes it (the
// analysis session's candidates, the host's planner settings) with the what-if controls (max
// slowdown, single-lane mode, margin, interference model, the lanes' turn policy) changing them as
// share plan's flags do; the models used are named. Apply goes through the daemon (see
// request_apply) and hands over the turn policy the plan was made for.
class SharingPanel : public QWidget {
  Q_OBJECT
 public:
  SharingPanel(DaemonLink& daemon, QWidget* parent = nullptr);
  void set_state(SharingPtr state);
  const SharingState* state() const { return state_.get(); }
  void refresh_daemon_state();
  // The what-if settings of the controls (unset: the host's).
  WhatIf what_if() const;
  SharingModel* model() const { return model_; }
  PlanJobsModel* jobs_model() const { return jobs_; }
  CandidatesModel* candidates_model() const { return candidates_; }
  StoredPlansModel* stored_model() const { return stored_; }
  SharingEventsModel* events_model() const { return events_; }
  QPushButton* apply_button() const { return apply_; }
  QLabel* apply_reason() const { return reason_; }
  QLabel* model_label() const { return model_label_; }
  QDoubleSpinBox* max_slowdown() const { return max_slowdown_; }
  QCheckBox* single_lane() const { return single_lane_; }
  QDoubleSpinBox* margin_sigma() const { return margin_sigma_; }
  // The interference model: the host's (item 0) or `--interference-alpha` (item 1) with alpha.
  QComboBox* interference() const { return interference_; }
  QDoubleSpinBox* interference_alpha() const { return alpha_; }
  // The lanes' turn policy control (`share plan --policy`): a change plans again for it.
  QComboBox* policy() const { return policy_; }
  // The turn policy of the plan shown, which Apply hands over (`share apply --policy`).
  std::string turn_policy() const;
  // The open confirmation of Apply (null when none): Apply checks that the plan's GPUs are the
  // connected host's, then asks, listing what will change; only its Apply button sends the plan.
  QMessageBox* confirmation() const { return confirmation_; }

 signals:
  // A what-if control changed: plan again with what_if().
  void what_if_changed();

 private:
  void request_apply();
  void show_model();  // the plan's settings and the lane policy, in words
  DaemonLink& daemon_;
  QPointer<QMessageBox> confirmation_;
  SharingPtr state_;
  bool user_set_slowdown_ = false, user_set_margin_ = false;
  SharingModel* model_;
  PlanJobsModel* jobs_;
  CandidatesModel* candidates_;
  QTableView* candidates_table_;
  StoredPlansModel* stored_;
  SharingEventsModel* events_;
  QTableView* events_table_;
  QTreeView* tree_;
  QLabel* summary_;
  QLabel* model_label_;
  QDoubleSpinBox* max_slowdown_;
  QCheckBox* single_lane_;
  QDoubleSpinBox* margin_sigma_;
  QComboBox* interference_;
  QDoubleSpinBox* alpha_;
  QComboBox* policy_;
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
  // The open source the queries run on (a choice when several are open).
  QComboBox* source_choice() const { return source_; }
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
  QComboBox* source_;
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
