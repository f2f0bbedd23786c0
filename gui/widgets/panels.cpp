#include "panels.h"

#include <sqlite3.h>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QEventLoop>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QTextBrowser>
#include <QTimer>
#include <QTreeView>
#include <QVBoxLayout>
#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>

#include "fleetscope/sharer/turn_model.h"
#include "fleetscope/timeline/ruler.h"
#include "plan_check.h"

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
  auto* split = new QSplitter(Qt::Vertical, this);
  table_ = make_table(proxy_, split);
  table_->sortByColumn(FleetModel::wasted_gpu_hours, Qt::DescendingOrder);
  sources_ = new SourcesModel(this);
  auto* sources_proxy = new QSortFilterProxyModel(this);
  sources_proxy->setSourceModel(sources_);
  auto* sources_box = new QWidget(split);
  auto* sources_layout = new QVBoxLayout(sources_box);
  sources_layout->setContentsMargins(0, 0, 0, 0);
  sources_layout->addWidget(new QLabel("Open sources (databases and traces):", sources_box));
  sources_layout->addWidget(make_table(sources_proxy, sources_box), 1);
  split->addWidget(table_);
  split->addWidget(sources_box);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  totals_ = new QLabel(this);
  layout->addWidget(filter_);
  layout->addWidget(totals_);
  layout->addWidget(split, 1);
  layout->addWidget(new QLabel(
      "Jobs of every open source by wasted GPU-hours (as `fleetscope fleet`); double-click a "
      "job to open its captures.",
      this));
  connect(filter_, &QLineEdit::textChanged, proxy_, &QSortFilterProxyModel::setFilterFixedString);
  connect(table_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    const analyzer::WorkflowWaste* row = model_->row_at(proxy_->mapToSource(index).row());
    if (row && session_)
      emit workflow_activated(QString::fromStdString(row->workflow), capture_keys(*session_, *row));
  });
}

void FleetView::set_session(SessionPtr session) {
  session_ = std::move(session);
  sources_->set_rows(session_ ? source_summaries(*session_) : std::vector<SourceSummary>{});
  set_rows({});
}

void FleetView::set_rows(FleetRows rows) {
  totals_->setText(fleet_totals(rows));
  model_->set_rows(std::move(rows));
  table_->resizeColumnsToContents();
}

// ---- Diff ---------------------------------------------------------------------------------------

DiffView::DiffView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* row = new QHBoxLayout;
  before_ = new QComboBox(this);
  after_ = new QComboBox(this);
  compare_ = new QPushButton("Compare", this);
  row->addWidget(new QLabel("Before:", this));
  row->addWidget(before_, 1);
  row->addWidget(new QLabel("After:", this));
  row->addWidget(after_, 1);
  row->addWidget(compare_);
  layout->addLayout(row);
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  layout->addWidget(status_);
  auto* split = new QSplitter(Qt::Vertical, this);
  metrics_ = new MetricDeltaModel(this);
  auto* metrics_proxy = new QSortFilterProxyModel(this);
  metrics_proxy->setSourceModel(metrics_);
  make_table(metrics_proxy, split);
  kernels_ = new KernelDeltaModel(this);
  auto* kernels_proxy = new QSortFilterProxyModel(this);
  kernels_proxy->setSourceModel(kernels_);
  make_table(kernels_proxy, split);
  layout->addWidget(split, 1);
  connect(compare_, &QPushButton::clicked, this, [this] {
    if (!session_ || before_->currentIndex() < 0 || after_->currentIndex() < 0) return;
    const auto& keys = session_->captures;
    const auto b = size_t(before_->currentData().toInt()),
               a = size_t(after_->currentData().toInt());
    if (b >= keys.size() || a >= keys.size()) return;
    status_->setText("Comparing…");
    emit compare_requested(keys[b], keys[a]);
  });
}

void DiffView::set_session(SessionPtr session) {
  session_ = std::move(session);
  before_->clear();
  after_->clear();
  metrics_->set_rows({});
  kernels_->set_rows({});
  status_->setText(session_ && session_->captures.size() >= 2
                       ? "Pick two captures (of any open source) and Compare: the metrics of "
                         "`fleetscope diff BEFORE AFTER`."
                       : "Open at least two captures to compare them (several files, or a "
                         "database with several captures).");
  if (!session_) return;
  for (size_t i = 0; i < session_->captures.size(); ++i) {
    const QString label = QString::fromStdString(session_->capture_label(session_->captures[i]));
    before_->addItem(label, int(i));
    after_->addItem(label, int(i));
  }
  if (after_->count() > 1) after_->setCurrentIndex(1);
  compare_->setEnabled(session_->captures.size() >= 2);
}

void DiffView::set_diff(DiffPtr diff) {
  if (!diff) {
    status_->setText("The comparison failed.");
    return;
  }
  metrics_->set_rows(diff->metrics);
  kernels_->set_rows(diff->kernels);
  status_->setText(QString("%1 → %2: utilization %3 % → %4 %, idle %5 → %6.")
                       .arg(before_->currentText(), after_->currentText())
                       .arg(QString::number(100 * diff->before.utilization, 'f', 1),
                            QString::number(100 * diff->after.utilization, 'f', 1),
                            format_duration(diff->before.idle_ns),
                            format_duration(diff->after.idle_ns)));
}

// ---- Findings -----------------------------------------------------------------------------------

FindingsPanel::FindingsPanel(QWidget* parent) : QWidget(parent) {
  qRegisterMetaType<store::Finding>();
  auto* layout = new QVBoxLayout(this);
  source_ = new QLabel(
      "Findings as stored in the database: the capture has no rows left to analyse.", this);
  source_->hide();
  layout->addWidget(source_);
  auto* deferred_row = new QHBoxLayout;
  deferred_ = new QLabel(this);
  deferred_->setWordWrap(true);
  analyze_ = new QPushButton("Analyze", this);
  deferred_row->addWidget(deferred_, 1);
  deferred_row->addWidget(analyze_);
  layout->addLayout(deferred_row);
  deferred_->hide();
  analyze_->hide();
  connect(analyze_, &QPushButton::clicked, this, [this] {
    analyze_->setEnabled(false);
    deferred_->setText("Analysing…");
    emit analysis_requested();
  });
  auto* split = new QSplitter(Qt::Vertical, this);
  model_ = new FindingsModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  table_ = make_table(proxy_, split);
  auto* below = new QSplitter(Qt::Horizontal, split);
  details_ = new QTextBrowser(below);
  evidence_ = new EvidenceModel(this);
  evidence_proxy_ = new QSortFilterProxyModel(this);
  evidence_proxy_->setSourceModel(evidence_);
  evidence_table_ = make_table(evidence_proxy_, below);
  evidence_table_->setToolTip(
      "Offending events, longest first: click to show one on the timeline, "
      "double-click to go there");
  below->addWidget(details_);
  below->addWidget(evidence_table_);
  split->addWidget(table_);
  split->addWidget(below);
  layout->addWidget(split);
  layout->addWidget(new QLabel(
      "Select a finding to mark it on the timeline; Enter or double-click to go there.", this));
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) { show_row(current); });
  connect(table_, &QTableView::activated, this, [this](const QModelIndex&) {
    if (const store::Finding* f = current_finding()) emit finding_activated(*f);
  });
  table_->installEventFilter(this);  // Enter activates (QTableView leaves it to the platform)
  connect(evidence_table_, &QTableView::clicked, this,
          [this](const QModelIndex& index) { request_event(index, false); });
  connect(evidence_table_, &QTableView::doubleClicked, this,
          [this](const QModelIndex& index) { request_event(index, true); });
}

bool FindingsPanel::eventFilter(QObject* watched, QEvent* event) {
  if (watched == table_ && event->type() == QEvent::KeyPress) {
    const int key = static_cast<QKeyEvent*>(event)->key();
    if (key == Qt::Key_Return || key == Qt::Key_Enter) {
      if (const store::Finding* f = current_finding()) emit finding_activated(*f);
      return true;
    }
  }
  return QWidget::eventFilter(watched, event);
}

const store::Finding* FindingsPanel::current_finding() const {
  const FindingRow* row = model_->row_at(proxy_->mapToSource(table_->currentIndex()).row());
  return row && row->finding ? &*row->finding : nullptr;
}

void FindingsPanel::request_event(const QModelIndex& index, bool go) {
  const EvidenceEvent* e = evidence_->row_at(evidence_proxy_->mapToSource(index).row());
  if (e && e->track) emit event_requested(*e->track, e->event, go);
}

void FindingsPanel::show_row(const QModelIndex& current) {
  current_ = {};
  evidence_->set_rows({});
  const FindingRow* row = model_->row_at(proxy_->mapToSource(current).row());
  if (!row) return details_->clear();
  if (!row->finding) {
    details_->setHtml("<h3>" + html_escape(row->rule) + ": not evaluated</h3><p>" +
                      html_escape(row->needs) + "</p>");
    return;
  }
  const store::Finding& f = *row->finding;
  const int64_t origin = timeline_ ? timeline_->span.begin : f.window_start.value_or(0);
  current_ = finding_evidence(f, timeline_.get(), origin);
  QString fields;
  for (const auto& [key, value] : current_.fields)
    fields +=
        "<tr><td><b>" + html_escape(key) + "</b></td><td>" + html_escape(value) + "</td></tr>";
  QString html = "<h3>" + html_escape(f.rule) + " (" + html_escape(f.severity) +
                 ")</h3><p><b>Impact:</b> " + format_duration(f.impact_ns) +
                 "</p><p><b>Recommendation:</b> " + html_escape(f.recommendation) + "</p>";
  if (current_.focus)
    html += "<p><b>Worst instance:</b> " +
            html_escape(timeline::ruler_label(current_.focus->begin - origin, 1000,
                                              current_.focus->begin - origin)) +
            " from the capture start, " + format_duration(current_.focus->length()) + "</p>";
  if (!current_.events.empty())
    html +=
        QString("<p><b>Offending events:</b> %1 listed (table)</p>").arg(current_.events.size());
  html += "<p><b>Evidence</b></p><table cellspacing='4'>" + fields + "</table>";
  details_->setHtml(html);
  evidence_->set_origin(origin);
  evidence_->set_rows(current_.events);
  evidence_table_->resizeColumnsToContents();
  emit finding_selected(f);
}

void FindingsPanel::show_deferred(int64_t events) {
  deferred_->setText(
      QString("Not analysed yet: this capture has %L1 events, and the analyzer holds all of "
              "them in memory while it runs (1.17 GB with the timeline for 10 million). Analyze "
              "runs it now (the results are kept, the events freed).")
          .arg(events));
  deferred_->show();
  analyze_->setEnabled(true);
  analyze_->show();
}

void FindingsPanel::set_analysis(const CaptureAnalysis* analysis) {
  if (analysis) {
    deferred_->hide();
    analyze_->hide();
  }
  model_->set_rows(analysis ? finding_rows(analysis->result()) : std::vector<FindingRow>{});
  source_->setVisible(analysis && analysis->result().source == analyzer::FindingsSource::stored);
  // By impact, largest first; rules not evaluated (impact -1) last.
  table_->sortByColumn(FindingsModel::impact, Qt::DescendingOrder);
  table_->resizeColumnsToContents();
  details_->clear();
  current_ = {};
  evidence_->set_rows({});
}

void FindingsPanel::select_row(int row) {
  table_->setCurrentIndex(proxy_->mapFromSource(model_->index(row, 0)));
}

void FindingsPanel::set_timeline(TimelinePtr timeline) {
  const bool refresh = timeline && timeline->has_events && timeline != timeline_;
  timeline_ = std::move(timeline);
  // Raw events arrived (a first part, or all): locate the selected finding's events now (without
  // re-emitting).
  if (refresh && current_finding()) {
    QSignalBlocker block(this);
    show_row(table_->currentIndex());
  }
}

// ---- Sharing ------------------------------------------------------------------------------------

SharingPanel::SharingPanel(DaemonLink& daemon, QWidget* parent) : QWidget(parent), daemon_(daemon) {
  auto* layout = new QVBoxLayout(this);
  // What-if: share plan's --max-slowdown, --single-lane, --margin-sigma and --interference-alpha.
  auto* controls = new QHBoxLayout;
  max_slowdown_ = new QDoubleSpinBox(this);
  max_slowdown_->setRange(1.0, 10.0);
  max_slowdown_->setSingleStep(0.05);
  max_slowdown_->setDecimals(2);
  max_slowdown_->setSuffix("x");
  max_slowdown_->setValue(1.2);
  margin_sigma_ = new QDoubleSpinBox(this);
  margin_sigma_->setRange(0.0, 10.0);
  margin_sigma_->setSingleStep(0.5);
  margin_sigma_->setDecimals(1);
  single_lane_ = new QCheckBox("Single lane per GPU", this);
  single_lane_->setToolTip("Salus's own mode: one lane per GPU that all its jobs time-slice");
  // share plan's interference choice: the host's model, or --interference-alpha A.
  interference_ = new QComboBox(this);
  interference_->addItem("host's model");
  interference_->addItem("alpha");
  interference_->setToolTip(
      "The interference model the planner predicts slowdowns with: the host's, or an alpha as "
      "share plan --interference-alpha A");
  alpha_ = new QDoubleSpinBox(this);
  alpha_->setRange(0.0, 100.0);
  alpha_->setSingleStep(0.1);
  alpha_->setDecimals(2);
  alpha_->setEnabled(false);
  // The lanes' turn policy (share plan --policy): the planner predicts who waits in a shared
  // lane by it, and Apply hands the plan's policy over with the plan (share apply).
  policy_ = new QComboBox(this);
  for (const std::string& name : sharer::turn_order_names())
    policy_->addItem(QString::fromStdString(name));
  policy_->setToolTip(
      "Turn policy of the plan's lanes, as share plan --policy: the plan is made for it "
      "(fifo: round robin at iteration boundaries; srtf: shortest remaining time first, from "
      "each job's steps label; priority: highest priority label first) and Apply hands it over");
  controls->addWidget(new QLabel("Max slowdown:", this));
  controls->addWidget(max_slowdown_);
  controls->addWidget(new QLabel("Margin (σ of T):", this));
  controls->addWidget(margin_sigma_);
  controls->addWidget(single_lane_);
  controls->addWidget(new QLabel("Interference:", this));
  controls->addWidget(interference_);
  controls->addWidget(alpha_);
  controls->addStretch(1);
  layout->addLayout(controls);
  model_label_ = new QLabel(this);
  model_label_->setWordWrap(true);
  layout->addWidget(model_label_);
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  layout->addWidget(summary_);
  connect(max_slowdown_, &QDoubleSpinBox::editingFinished, this, [this] {
    user_set_slowdown_ = true;
    emit what_if_changed();
  });
  connect(margin_sigma_, &QDoubleSpinBox::editingFinished, this, [this] {
    user_set_margin_ = true;
    emit what_if_changed();
  });
  connect(single_lane_, &QCheckBox::toggled, this, [this] { emit what_if_changed(); });
  connect(interference_, &QComboBox::currentIndexChanged, this, [this](int index) {
    alpha_->setEnabled(index == 1);
    emit what_if_changed();
  });
  connect(alpha_, &QDoubleSpinBox::editingFinished, this, [this] {
    if (interference_->currentIndex() == 1) emit what_if_changed();
  });
  // The policy orders each shared lane: the planner predicts the waits by it (one code path
  // with share plan --policy), so a change plans again.
  connect(policy_, &QComboBox::currentIndexChanged, this, [this] { emit what_if_changed(); });
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
  // The turn policy sits beside Apply (the panel keeps fitting a 900 x 600 window); it is a
  // what-if control all the same: a change plans again.
  row->addWidget(new QLabel("Turn policy:", this));
  row->addWidget(policy_);
  row->addWidget(apply_);
  row->addWidget(reason_, 1);
  layout->addLayout(row);
  connect(apply_, &QPushButton::clicked, this, &SharingPanel::request_apply);
  refresh_daemon_state();
}

void SharingPanel::request_apply() {
  if (!state_ || state_->plan.jobs.empty()) return;
  // The plan must be for the connected host: its GPUs are devices the daemon reports.
  std::string error;
  const auto host = daemon_.status(error);
  if (!host) {
    reason_->setText(QString::fromStdString(error));
    return;
  }
  const std::string mismatch = plan_host_mismatch(state_->plan, *host);
  if (!mismatch.empty()) {
    reason_->setText("Not applied: " + QString::fromStdString(mismatch) + ".");
    return;
  }
  // Then the user confirms, seeing what will change.
  QStringList changes;
  for (const auto& line : plan_changes(state_->plan)) changes << QString::fromStdString(line);
  auto* box = new QMessageBox(QMessageBox::Question, "Apply consolidation plan",
                              QString("Hand this plan to fleetscoped on %1? New and restarted "
                                      "jobs of its workflows will run in these lanes, taking "
                                      "turns by the %2 policy.")
                                  .arg(QString::fromStdString(host->hostname))
                                  .arg(QString::fromStdString(turn_policy())),
                              QMessageBox::NoButton, this);
  box->setInformativeText(changes.join("\n"));
  QPushButton* confirm = box->addButton("Apply", QMessageBox::AcceptRole);
  box->addButton(QMessageBox::Cancel);
  box->setDefaultButton(QMessageBox::Cancel);
  box->setAttribute(Qt::WA_DeleteOnClose);
  // The plan confirmed is the plan sent, whatever is planned meanwhile.
  connect(
      box, &QMessageBox::finished, this,
      [this, box, confirm, state = state_, policy = turn_policy()](int) {
        if (box->clickedButton() != confirm) {
          reason_->setText("Apply cancelled: nothing was sent to the daemon.");
          return;
        }
        std::string apply_error;
        if (auto plan_id = daemon_.apply(state->plan, policy, apply_error))
          reason_->setText(QString("Plan %1 applied by the daemon: new and restarted jobs of its "
                                   "workflows go to its lanes (fleetscope run --share).")
                               .arg(*plan_id));
        else
          reason_->setText(QString::fromStdString(apply_error));
      });
  confirmation_ = box;
  box->open();
}

void SharingPanel::refresh_daemon_state() {
  const std::string blocker = daemon_.apply_blocker();
  const bool has_plan = state_ && !state_->plan.jobs.empty();
  apply_->setEnabled(blocker.empty() && has_plan);
  reason_->setText(!blocker.empty() ? QString::fromStdString(blocker)
                   : has_plan       ? QString("Connected: Apply hands the plan to the daemon.")
                                    : QString("No plan to apply."));
}

WhatIf SharingPanel::what_if() const {
  WhatIf w;
  if (user_set_slowdown_) w.max_slowdown = max_slowdown_->value();
  if (user_set_margin_) w.margin_sigma = margin_sigma_->value();
  w.single_lane = single_lane_->isChecked();
  if (interference_->currentIndex() == 1) w.interference_alpha = alpha_->value();
  if (auto order = sharer::turn_order_named(policy_->currentText().toStdString()))
    w.turn_order = *order;
  return w;
}

std::string SharingPanel::turn_policy() const {
  // The policy the plan was made for: Apply must not hand over another.
  return sharer::turn_order_name(state_ ? state_->plan.turn_order : sharer::TurnOrder::kFifo);
}

void SharingPanel::show_model() {
  if (!state_) return;
  const SharingState* state = state_.get();
  model_label_->setText(
      QString("Planned as `fleetscope share plan --policy %7` plans (one code path): "
              "interference %1; CUDA context per job %2 MiB (%3); max slowdown %4x; margin %5 σ; "
              "%6; turn policy %8. Apply hands it over with lane policy %7.")
          .arg(QString::fromStdString(state->interference))
          .arg(state->options.memory.context_bytes >> 20)
          .arg(QString::fromStdString(state->context_source))
          .arg(state->options.max_slowdown)
          .arg(state->options.memory.margin.z)
          .arg(state->options.single_lane ? "one lane per GPU" : "lanes by memory")
          .arg(QString::fromStdString(sharer::turn_order_name(state->plan.turn_order)))
          .arg(QString::fromStdString(sharer::turn_order_model(state->plan.turn_order))));
}

void SharingPanel::set_state(SharingPtr state) {
  state_ = std::move(state);
  if (!state_) {
    model_->set_plan({}, {});
    jobs_->set_rows({});
    candidates_->set_rows({});
    stored_->set_rows({});
    events_->set_rows({});
    summary_->clear();
    model_label_->clear();
  } else {
    const SharingState* state = state_.get();
    // The controls show what the plan was made with (the host's settings until changed).
    {
      const QSignalBlocker b1(max_slowdown_), b2(margin_sigma_), b3(single_lane_), b4(policy_);
      max_slowdown_->setValue(state->options.max_slowdown);
      margin_sigma_->setValue(state->options.memory.margin.z);
      single_lane_->setChecked(state->options.single_lane);
      policy_->setCurrentText(QString::fromStdString(turn_policy()));
    }
    show_model();
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
    for (const auto& s : state->skipped) text += "\nNot planned: " + QString::fromStdString(s);
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

struct SqlConsole::Query {
  std::mutex mutex;                       // guards `reader`, which the worker opens
  std::unique_ptr<store::Reader> reader;  // the worker's own connection
  std::atomic<bool> cancelled{false}, timed_out{false};
  void interrupt() {  // sqlite3_interrupt is thread-safe in SQLite
    std::lock_guard lock(mutex);
    if (reader) sqlite3_interrupt(reader->database().raw());
  }
};

SqlConsole::SqlConsole(QWidget* parent) : QWidget(parent) {
  pool_.setMaxThreadCount(1);
  auto* layout = new QVBoxLayout(this);
  source_ = new QComboBox(this);
  source_->setToolTip("The open database the query runs on");
  editor_ = new QPlainTextEdit(this);
  editor_->setPlainText(
      "SELECT s.value AS kernel, COUNT(*) AS count, SUM(k.end - k.start) AS total_ns\n"
      "FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName\n"
      "GROUP BY 1 ORDER BY 3 DESC LIMIT 50");
  editor_->setMaximumHeight(110);
  run_button_ = new QPushButton("Run (read-only)", this);
  cancel_button_ = new QPushButton("Cancel", this);
  cancel_button_->setEnabled(false);
  status_ = new QLabel(this);
  model_ = new SqlResultModel(this);
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(model_);
  auto* table = make_table(proxy, this);
  layout->addWidget(source_);
  layout->addWidget(editor_);
  auto* row = new QHBoxLayout;
  row->addWidget(run_button_);
  row->addWidget(cancel_button_);
  row->addWidget(status_, 1);
  layout->addLayout(row);
  layout->addWidget(table, 1);
  timeout_ = new QTimer(this);
  timeout_->setSingleShot(true);
  connect(run_button_, &QPushButton::clicked, this, [this] { start(editor_->toPlainText()); });
  connect(source_, &QComboBox::currentIndexChanged, this,
          [this] { start(editor_->toPlainText()); });
  connect(cancel_button_, &QPushButton::clicked, this, &SqlConsole::cancel);
  connect(timeout_, &QTimer::timeout, this, [this] {
    if (!current_) return;
    current_->timed_out = true;
    current_->interrupt();
  });
}

SqlConsole::~SqlConsole() {
  cancel();
  pool_.waitForDone();
}

void SqlConsole::set_session(SessionPtr session) {
  cancel();
  session_ = std::move(session);
  model_->set_result({});
  status_->clear();
  {
    const QSignalBlocker block(source_);
    source_->clear();
    if (session_)
      for (const auto& s : session_->sources())
        source_->addItem(QString::fromStdString(s->label + " (" + s->format + ")"));
  }
  source_->setVisible(source_->count() > 1);
  if (session_) start(editor_->toPlainText());  // the example query: the console starts answered
}

void SqlConsole::cancel() {
  if (!current_) return;
  current_->cancelled = true;
  current_->interrupt();
}

void SqlConsole::start(const QString& sql) {
  cancel();
  editor_->setPlainText(sql);
  if (!session_) {
    status_->setText("No database open.");
    emit finished(false);
    return;
  }
  auto query = std::make_shared<Query>();
  current_ = query;
  status_->setText("Running…");
  cancel_button_->setEnabled(true);
  timeout_->start(timeout_ms_);
  const std::string text = sql.toStdString();
  // The connection is opened by the worker too: opening waits for a database another process
  // holds locked (up to the store's busy timeout, 5 s) and copies a file of an older schema to
  // migrate it (seconds for a GB file), which on the GUI thread froze the window and delayed
  // the timeline's first paint.
  pool_.start([this, query, text, session = session_,
               source = size_t(std::max(0, source_->currentIndex()))] {
    std::optional<store::QueryResult> result;
    QString error;
    try {
      if (query->cancelled) throw std::runtime_error("cancelled");  // before it began
      auto reader = session->reader(source);
      {
        std::lock_guard lock(query->mutex);
        query->reader = std::move(reader);
      }
      if (query->cancelled) throw std::runtime_error("cancelled");
      result = query->reader->query(text);
    } catch (const std::exception& e) {
      error = QString::fromUtf8(e.what());
    }
    // Queued to the GUI thread; the destructor waits for this worker, so `this` outlives it.
    QMetaObject::invokeMethod(
        this, [this, query, result = std::move(result), error] { finish(query, result, error); },
        Qt::QueuedConnection);
  });
}

void SqlConsole::finish(const std::shared_ptr<Query>& query,
                        std::optional<store::QueryResult> result, QString error) {
  if (query != current_) return;  // superseded by a newer query
  current_.reset();
  timeout_->stop();
  cancel_button_->setEnabled(false);
  if (result) {
    model_->set_result(*result);
    status_->setText(QString("%1 row(s)").arg(result->rows.size()));
    emit finished(true);
    return;
  }
  model_->set_result({});
  if (query->timed_out)
    status_->setText(
        QString("Error: timed out after %1 s (interrupted)").arg(timeout_ms_ / 1000.0));
  else if (query->cancelled)
    status_->setText("Error: cancelled");
  else
    status_->setText("Error: " + error);
  emit finished(false);
}

bool SqlConsole::run(const QString& sql) {
  bool ok = false;
  QEventLoop loop;
  auto c = connect(this, &SqlConsole::finished, &loop, [&](bool result) {
    ok = result;
    loop.quit();
  });
  start(sql);
  if (running()) loop.exec();
  disconnect(c);
  return ok;
}

QString SqlConsole::error() const {
  return status_->text().startsWith("Error: ") ? status_->text() : QString();
}

}  // namespace fleetscope::gui
