// The fleet, findings, sharing and SQL panels of the main window. Each shows a model from the
// core library and forwards the user's choices as signals; none computes anything itself.
#pragma once

#include <QWidget>
#include <memory>

#include "daemon_link.h"
#include "daemon_models.h"
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

 signals:
  void workflow_activated(QString workflow, std::vector<int64_t> capture_ids);

 private:
  FleetModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  QLineEdit* filter_;
};

class FindingsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit FindingsPanel(QWidget* parent = nullptr);
  void set_analysis(const CaptureAnalysis* analysis);
  FindingsModel* model() const { return model_; }
  QTableView* table() const { return table_; }
  // Selects the row of the model (source row), as a click does.
  void select_row(int row);

 signals:
  void finding_selected(fleetscope::store::Finding finding);

 private:
  FindingsModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  QTextBrowser* details_;
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

 private:
  DaemonLink& daemon_;
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

class SqlConsole : public QWidget {
  Q_OBJECT
 public:
  explicit SqlConsole(QWidget* parent = nullptr);
  void set_session(SessionPtr session);
  // Runs `sql` read-only; false (and the error shown) when it fails.
  bool run(const QString& sql);
  SqlResultModel* model() const { return model_; }
  QString error() const;

 private:
  std::unique_ptr<store::Reader> reader_;
  QPlainTextEdit* editor_;
  SqlResultModel* model_;
  QLabel* status_;
};

}  // namespace fleetscope::gui

Q_DECLARE_METATYPE(fleetscope::store::Finding)
