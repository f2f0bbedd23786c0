#include "panels.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QTextBrowser>
#include <QTreeView>
#include <QVBoxLayout>
#include <nlohmann/json.hpp>

namespace fleetscope::gui {

namespace {

QTableView* make_table(QSortFilterProxyModel* proxy, QWidget* parent) {
  proxy->setSortRole(kSortRole);
  auto* table = new QTableView(parent);
  table->setModel(proxy);
  table->setSortingEnabled(true);
  table->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);  // the model's own order
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setSelectionMode(QAbstractItemView::SingleSelection);
  table->horizontalHeader()->setStretchLastSection(true);
  table->verticalHeader()->hide();
  return table;
}

QString html_escape(const std::string& s) {
  return QString::fromStdString(s).toHtmlEscaped();
}

}  // namespace

// ---- Fleet --------------------------------------------------------------------------------------

FleetView::FleetView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  filter_ = new QLineEdit(this);
  filter_->setPlaceholderText("Filter workflows, users, findings…");
  filter_->setClearButtonEnabled(true);
  model_ = new FleetModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setFilterKeyColumn(-1);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  table_ = make_table(proxy_, this);
  table_->sortByColumn(FleetModel::wasted_gpu_hours, Qt::DescendingOrder);
  layout->addWidget(filter_);
  layout->addWidget(table_, 1);
  layout->addWidget(new QLabel("Double-click a workflow to open its captures.", this));
  connect(filter_, &QLineEdit::textChanged, proxy_, &QSortFilterProxyModel::setFilterFixedString);
  connect(table_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    const FleetRow* row = model_->row_at(proxy_->mapToSource(index).row());
    if (row) emit workflow_activated(QString::fromStdString(row->workflow), row->capture_ids);
  });
}

void FleetView::set_rows(std::vector<FleetRow> rows) {
  model_->set_rows(std::move(rows));
  table_->resizeColumnsToContents();
}

// ---- Findings -----------------------------------------------------------------------------------

FindingsPanel::FindingsPanel(QWidget* parent) : QWidget(parent) {
  qRegisterMetaType<store::Finding>();
  auto* layout = new QVBoxLayout(this);
  auto* split = new QSplitter(Qt::Vertical, this);
  model_ = new FindingsModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  table_ = make_table(proxy_, split);
  details_ = new QTextBrowser(split);
  split->addWidget(table_);
  split->addWidget(details_);
  layout->addWidget(split);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            const FindingRow* row = model_->row_at(proxy_->mapToSource(current).row());
            if (!row) return details_->clear();
            if (!row->finding) {
              details_->setHtml("<h3>" + html_escape(row->rule) + ": not evaluated</h3><p>" +
                                html_escape(row->needs) + "</p>");
              return;
            }
            const store::Finding& f = *row->finding;
            QString evidence = QString::fromStdString(f.evidence_json);
            try {
              evidence = QString::fromStdString(nlohmann::json::parse(f.evidence_json).dump(2));
            } catch (const std::exception&) {
            }
            details_->setHtml("<h3>" + html_escape(f.rule) + " (" + html_escape(f.severity) +
                              ")</h3><p><b>Impact:</b> " + format_duration(f.impact_ns) +
                              "</p><p><b>Recommendation:</b> " + html_escape(f.recommendation) +
                              "</p><p><b>Evidence:</b></p><pre>" + evidence.toHtmlEscaped() +
                              "</pre>");
            emit finding_selected(f);
          });
}

void FindingsPanel::set_analysis(const CaptureAnalysis* analysis) {
  model_->set_rows(analysis ? finding_rows(analysis->result) : std::vector<FindingRow>{});
  // By impact, largest first; rules not evaluated (impact -1) last.
  table_->sortByColumn(FindingsModel::impact, Qt::DescendingOrder);
  table_->resizeColumnsToContents();
  details_->clear();
}

void FindingsPanel::select_row(int row) {
  table_->setCurrentIndex(proxy_->mapFromSource(model_->index(row, 0)));
}

// ---- Sharing ------------------------------------------------------------------------------------

SharingPanel::SharingPanel(DaemonLink& daemon, QWidget* parent) : QWidget(parent), daemon_(daemon) {
  auto* layout = new QVBoxLayout(this);
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  layout->addWidget(summary_);
  auto* split = new QSplitter(Qt::Vertical, this);
  model_ = new SharingModel(this);
  tree_ = new QTreeView(split);
  tree_->setModel(model_);
  jobs_ = new PlanJobsModel(this);
  auto* jobs_proxy = new QSortFilterProxyModel(this);
  jobs_proxy->setSourceModel(jobs_);
  auto* jobs_table = make_table(jobs_proxy, split);
  candidates_ = new CandidatesModel(this);
  auto* candidates_proxy = new QSortFilterProxyModel(this);
  candidates_proxy->setSourceModel(candidates_);
  candidates_table_ = make_table(candidates_proxy, split);
  stored_ = new StoredPlansModel(this);
  auto* stored_proxy = new QSortFilterProxyModel(this);
  stored_proxy->setSourceModel(stored_);
  auto* stored_table = make_table(stored_proxy, split);
  // Under the plans, what the daemon's sharing service did with them (sharing_events).
  events_ = new SharingEventsModel(this);
  auto* events_proxy = new QSortFilterProxyModel(this);
  events_proxy->setSourceModel(events_);
  events_table_ = make_table(events_proxy, split);
  split->addWidget(candidates_table_);
  split->addWidget(tree_);
  split->addWidget(jobs_table);
  split->addWidget(stored_table);
  split->addWidget(events_table_);
  layout->addWidget(split, 1);
  auto* row = new QHBoxLayout;
  apply_ = new QPushButton("Apply plan", this);
  reason_ = new QLabel(this);
  reason_->setWordWrap(true);
  row->addWidget(apply_);
  row->addWidget(reason_, 1);
  layout->addLayout(row);
  connect(apply_, &QPushButton::clicked, this, [this] {
    if (!state_) return;
    std::string error;
    if (auto plan_id = daemon_.apply(state_->plan, error))
      reason_->setText(QString("Plan %1 applied by the daemon: new and restarted jobs of its "
                               "workflows go to its lanes (fleetscope run --share).")
                           .arg(*plan_id));
    else
      reason_->setText(QString::fromStdString(error));
  });
  refresh_daemon_state();
}

void SharingPanel::refresh_daemon_state() {
  const std::string blocker = daemon_.apply_blocker();
  const bool has_plan = state_ && !state_->plan.jobs.empty();
  apply_->setEnabled(blocker.empty() && has_plan);
  reason_->setText(!blocker.empty() ? QString::fromStdString(blocker)
                   : has_plan       ? QString("Connected: Apply hands the plan to the daemon.")
                                    : QString("No plan to apply."));
}

void SharingPanel::set_state(const SharingState* state) {
  state_ = state;
  if (!state) {
    model_->set_plan({}, {});
    jobs_->set_rows({});
    candidates_->set_rows({});
    stored_->set_rows({});
    events_->set_rows({});
    summary_->clear();
  } else {
    model_->set_plan(state->plan, state->jobs);
    tree_->expandAll();
    jobs_->set_rows(state->plan.jobs);
    candidates_->set_rows(state->candidates);
    candidates_table_->resizeColumnsToContents();
    stored_->set_rows(state->stored);
    events_->set_rows(state->events);
    events_table_->resizeColumnsToContents();
    QString text = QString("Current plan: %1 job(s) on %2 GPU(s) → %3 GPU(s), %4 GPU(s) freed.")
                       .arg(state->plan.jobs.size())
                       .arg(state->plan.gpus_before)
                       .arg(state->plan.gpus_after)
                       .arg(state->plan.gpus_freed.size());
    if (state->jobs.empty())
      text =
          "No job can be planned: the planner needs each job's measured memory (P, T) and its "
          "GPU's capacity.";
    for (const auto& s : state->skipped) text += "\nLeft out: " + QString::fromStdString(s);
    text += QString("\nRecorded plans (lane_plans): %1; sharing events (sharing_events): %2%3.")
                .arg(state->stored.size())
                .arg(state->events.size())
                .arg(state->events_truncated ? " (the latest)" : "");
    summary_->setText(text);
  }
  refresh_daemon_state();
}

// ---- Daemon -------------------------------------------------------------------------------------

DaemonPanel::DaemonPanel(DaemonLink& daemon, QWidget* parent) : QWidget(parent), daemon_(daemon) {
  auto* layout = new QVBoxLayout(this);
  auto* row = new QHBoxLayout;
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  auto* refresh_button = new QPushButton("Refresh", this);
  row->addWidget(summary_, 1);
  row->addWidget(refresh_button);
  layout->addLayout(row);
  auto* split = new QSplitter(Qt::Vertical, this);
  auto add_table = [&](QAbstractItemModel* model, const QString& title) {
    auto* box = new QWidget(split);
    auto* box_layout = new QVBoxLayout(box);
    box_layout->setContentsMargins(0, 0, 0, 0);
    box_layout->addWidget(new QLabel(title, box));
    auto* proxy = new QSortFilterProxyModel(this);
    proxy->setSourceModel(model);
    box_layout->addWidget(make_table(proxy, box), 1);
    split->addWidget(box);
  };
  agents_ = new DaemonAgentsModel(this);
  devices_ = new DaemonDevicesModel(this);
  windows_ = new DaemonWindowsModel(this);
  add_table(devices_, "GPUs");
  add_table(agents_, "Agents (yours, or all when you are root)");
  add_table(windows_, "Open trace windows");
  layout->addWidget(split, 1);
  connect(refresh_button, &QPushButton::clicked, this, [this] { refresh(); });
  summary_->setText(QString::fromStdString(daemon_.apply_blocker()));
}

bool DaemonPanel::refresh() {
  std::string error;
  auto status = daemon_.status(error);
  if (!status) {
    agents_->set_rows({});
    devices_->set_rows({});
    windows_->set_rows({});
    summary_->setText(QString::fromStdString(error));
    return false;
  }
  summary_->setText(daemon_summary(*status));
  agents_->set_rows(std::move(status->agents));
  devices_->set_rows(std::move(status->devices));
  windows_->set_rows(std::move(status->open_windows));
  return true;
}

// ---- SQL ----------------------------------------------------------------------------------------

SqlConsole::SqlConsole(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  editor_ = new QPlainTextEdit(this);
  editor_->setPlainText(
      "SELECT s.value AS kernel, COUNT(*) AS count, SUM(k.end - k.start) AS total_ns\n"
      "FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName\n"
      "GROUP BY 1 ORDER BY 3 DESC LIMIT 50");
  editor_->setMaximumHeight(110);
  auto* run_button = new QPushButton("Run (read-only)", this);
  status_ = new QLabel(this);
  model_ = new SqlResultModel(this);
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(model_);
  auto* table = make_table(proxy, this);
  layout->addWidget(editor_);
  auto* row = new QHBoxLayout;
  row->addWidget(run_button);
  row->addWidget(status_, 1);
  layout->addLayout(row);
  layout->addWidget(table, 1);
  connect(run_button, &QPushButton::clicked, this, [this] { run(editor_->toPlainText()); });
}

void SqlConsole::set_session(SessionPtr session) {
  reader_ = session ? session->reader() : nullptr;
  model_->set_result({});
  status_->clear();
  if (reader_)
    run(editor_->toPlainText());  // the example query, so the console starts with an answer
}

bool SqlConsole::run(const QString& sql) {
  if (!reader_) {
    status_->setText("No database open.");
    return false;
  }
  editor_->setPlainText(sql);
  try {
    const store::QueryResult result = reader_->query(sql.toStdString());
    model_->set_result(result);
    status_->setText(QString("%1 row(s)").arg(result.rows.size()));
    return true;
  } catch (const std::exception& e) {
    model_->set_result({});
    status_->setText(QString("Error: ") + e.what());
    return false;
  }
}

QString SqlConsole::error() const {
  return status_->text().startsWith("Error: ") ? status_->text() : QString();
}

}  // namespace fleetscope::gui
