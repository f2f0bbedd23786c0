#include "capture_view.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QHorizontalStackedBarSeries>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QShortcut>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>
#include <QValueAxis>

#include <functional>
#include <map>

#include "critical_path_events.h"
#include "flame_graph.h"
#include "fleetscope/analyzer/device_metrics.h"
#include "fleetscope/analyzer/report_document.h"
#include "fleetscope/analyzer/time_axis.h"
#include "timeline_busy.h"
#include "timeline_widget.h"

namespace fleetscope::gui {

namespace {

QChartView* make_chart(const QString& title) {
  auto* chart = new QChart;
  chart->setTitle(title);
  chart->legend()->setAlignment(Qt::AlignRight);
  chart->setMargins(QMargins(2, 2, 2, 2));
  auto* view = new QChartView(chart);
  view->setRenderHint(QPainter::Antialiasing);
  view->setMinimumHeight(140);
  return view;
}

QTableView* make_table(QAbstractItemModel* model, QWidget* parent) {
  auto* proxy = new QSortFilterProxyModel(parent);
  proxy->setSourceModel(model);
  proxy->setSortRole(kSortRole);
  auto* table = new QTableView(parent);
  table->setModel(proxy);
  table->setSortingEnabled(true);
  table->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);  // the model's own order
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->horizontalHeader()->setStretchLastSection(true);
  table->verticalHeader()->hide();
  return table;
}

}  // namespace

CaptureView::CaptureView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* top = new QHBoxLayout;
  captures_ = new QComboBox(this);
  status_ = new QLabel(this);
  top->addWidget(new QLabel("Capture:", this));
  top->addWidget(captures_, 2);
  top->addWidget(status_, 2);
  layout->addLayout(top);
  // The search sits on the capture row (no extra height for the timeline to lose).
  auto* search_bar = top;
  search_ = new QLineEdit(this);
  search_->setPlaceholderText("Search events by name (Enter: next, Shift+Enter: previous)");
  search_->setClearButtonEnabled(true);
  search_regex_ = new QCheckBox("regex", this);
  auto* previous = new QToolButton(this);
  previous->setText("◀");
  previous->setToolTip("Previous match (Shift+F3)");
  auto* next = new QToolButton(this);
  next->setText("▶");
  next->setToolTip("Next match (F3)");
  search_status_ = new QLabel(this);
  search_bar->addWidget(new QLabel("Find:", this));
  search_bar->addWidget(search_, 3);
  search_bar->addWidget(search_regex_);
  search_bar->addWidget(previous);
  search_bar->addWidget(next);
  search_bar->addWidget(search_status_, 1);

  auto* vertical = new QSplitter(Qt::Vertical, this);
  auto* horizontal = new QSplitter(Qt::Horizontal, vertical);
  tracks_ = new TrackModel(this);
  track_view_ = new QTreeView(horizontal);
  track_view_->setModel(tracks_);
  track_view_->setMinimumWidth(150);
  timeline_ = new TimelineWidget(horizontal);
  horizontal->addWidget(track_view_);
  horizontal->addWidget(timeline_);
  horizontal->setStretchFactor(1, 5);
  vertical->addWidget(horizontal);

  auto* charts = new QWidget(vertical);
  auto* charts_layout = new QHBoxLayout(charts);
  charts_layout->setContentsMargins(0, 0, 0, 0);
  utilization_ = make_chart("Kernel utilization over time (visible range)");
  memory_ = make_chart("Allocated device memory (visible range)");
  charts_layout->addWidget(utilization_);
  charts_layout->addWidget(memory_);
  vertical->addWidget(charts);

  bottom_ = new QTabWidget(vertical);
  aggregate_ = new AggregateModel(this);
  aggregate_table_ = make_table(aggregate_, bottom_);
  bottom_->addTab(aggregate_table_, "Selected range");
  auto* details_page = new QWidget(bottom_);
  auto* details_layout = new QVBoxLayout(details_page);
  details_ = new KeyValueModel(this);
  flow_label_ = new QLabel(details_page);
  flow_label_->setWordWrap(true);
  details_layout->addWidget(flow_label_);
  details_layout->addWidget(make_table(details_, details_page));
  bottom_->addTab(details_page, "Selected event");
  steps_ = make_chart("Step time breakdown (profiler plugin)");
  bottom_->addTab(steps_, "Steps");
  flame_page_ = new QWidget(bottom_);
  auto* flame_layout = new QVBoxLayout(flame_page_);
  flame_layout->setContentsMargins(0, 0, 0, 0);
  flame_order_ = new QComboBox(flame_page_);
  flame_order_->addItem("Top-down (flame graph: callers below their callees)");
  flame_order_->addItem("Bottom-up (self time first, then the callers)");
  flame_ = new FlameGraphWidget(flame_page_);
  flame_layout->addWidget(flame_order_);
  flame_layout->addWidget(flame_, 1);
  bottom_->addTab(flame_page_, "CPU ops flame graph (visible range)");
  // Kernels, CUDA API calls, copies, … of the visible range, top by total time (nsys stats'
  // summaries, following the zoom and pan while the tab is shown).
  visible_summary_ = new AggregateModel(this);
  visible_page_ = make_table(visible_summary_, bottom_);
  bottom_->addTab(visible_page_, "Summary (visible range)");
  // HTA's critical path of the first iteration: the events along it, to highlight and visit.
  critical_page_ = new QWidget(bottom_);
  auto* critical_layout = new QVBoxLayout(critical_page_);
  critical_layout->setContentsMargins(0, 0, 0, 0);
  critical_toggle_ = new QCheckBox("Highlight the critical path on the timeline", critical_page_);
  critical_toggle_->setEnabled(false);
  critical_summary_ = new QLabel(critical_page_);
  critical_summary_->setWordWrap(true);
  critical_model_ = new EvidenceModel(this);
  critical_table_ = make_table(critical_model_, critical_page_);
  critical_table_->setSortingEnabled(false);  // path order
  critical_layout->addWidget(critical_toggle_);
  critical_layout->addWidget(critical_summary_);
  critical_layout->addWidget(critical_table_, 1);
  bottom_->addTab(critical_page_, "Critical path");
  vertical->addWidget(bottom_);
  vertical->setStretchFactor(0, 5);
  vertical->setStretchFactor(1, 2);
  vertical->setStretchFactor(2, 2);
  layout->addWidget(vertical, 1);

  chart_timer_ = new QTimer(this);
  chart_timer_->setSingleShot(true);
  chart_timer_->setInterval(40);
  connect(chart_timer_, &QTimer::timeout, this, &CaptureView::update_charts);
  connect(timeline_, &TimelineWidget::visible_range_changed, this,
          [this] { chart_timer_->start(); });
  connect(timeline_, &TimelineWidget::range_selected, this, &CaptureView::on_range_selected);
  connect(timeline_, &TimelineWidget::event_selected, this, &CaptureView::on_event_selected);
  auto run_search = [this] { timeline_->set_search(search_->text(), search_regex_->isChecked()); };
  connect(search_, &QLineEdit::textChanged, this, run_search);
  connect(search_regex_, &QCheckBox::toggled, this, run_search);
  search_->installEventFilter(this);  // Enter: next match, Shift+Enter: previous
  connect(next, &QToolButton::clicked, timeline_, &TimelineWidget::next_match);
  connect(previous, &QToolButton::clicked, timeline_, &TimelineWidget::previous_match);
  connect(new QShortcut(QKeySequence::Find, this), &QShortcut::activated, this, [this] {
    search_->setFocus();
    search_->selectAll();
  });
  connect(new QShortcut(QKeySequence::FindNext, this), &QShortcut::activated, timeline_,
          &TimelineWidget::next_match);
  connect(new QShortcut(QKeySequence::FindPrevious, this), &QShortcut::activated, timeline_,
          &TimelineWidget::previous_match);
  connect(timeline_, &TimelineWidget::search_changed, this, [this](int current, int count) {
    if (search_->text().isEmpty())
      search_status_->clear();
    else if (count == 0)
      search_status_->setText(timeline_data_ && !timeline_data_->complete()
                                  ? "no matches yet (events loading)"
                                  : "no matches");
    else
      search_status_->setText(current < 0 ? QString("%1 matches").arg(count)
                                          : QString("%1 / %2").arg(current + 1).arg(count));
  });
  timeline_->set_tooltip_provider(
      [this](size_t track, int64_t event) { return tooltip_extra(track, event); });
  connect(track_view_, &QTreeView::collapsed, this, &CaptureView::update_hidden_tracks);
  connect(track_view_, &QTreeView::expanded, this, &CaptureView::update_hidden_tracks);
  connect(flame_order_, &QComboBox::currentIndexChanged, this, [this](int index) {
    flame_->set_order(index == 0 ? timeline::CallTreeOrder::top_down
                                 : timeline::CallTreeOrder::bottom_up);
  });
  connect(critical_toggle_, &QCheckBox::toggled, this, &CaptureView::show_critical_path);
  connect(critical_table_, &QTableView::clicked, this, [this](const QModelIndex& index) {
    const EvidenceEvent* e = critical_model_->row_at(index.row());
    if (e && e->track) timeline_->reveal_event(*e->track, e->event);
  });
  connect(bottom_, &QTabWidget::currentChanged, this, [this] {
    update_flame_graph();
    update_visible_summary();
  });
  connect(captures_, &QComboBox::activated, this,
          [this](int index) { emit capture_requested(captures_->itemData(index).toInt()); });
  connect(track_view_, &QTreeView::clicked, this, [this](const QModelIndex& index) {
    const TreeNode* n = tracks_->node(index);
    if (n && n->payload >= 0) timeline_->scroll_to_track(size_t(n->payload));
  });
}

bool CaptureView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == search_ && event->type() == QEvent::KeyPress) {
    auto* key = static_cast<QKeyEvent*>(event);
    if (key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) {
      if (key->modifiers() & Qt::ShiftModifier)
        timeline_->previous_match();
      else
        timeline_->next_match();
      return true;
    }
  }
  return QWidget::eventFilter(watched, event);
}

void CaptureView::update_hidden_tracks() {
  if (!timeline_data_) return;
  // A track is hidden when any group above it in the tree is collapsed.
  std::vector<bool> hidden(timeline_data_->tracks.size(), false);
  std::function<void(const QModelIndex&, bool)> walk = [&](const QModelIndex& parent,
                                                           bool under_collapsed) {
    for (int r = 0; r < tracks_->rowCount(parent); ++r) {
      const QModelIndex index = tracks_->index(r, 0, parent);
      const TreeNode* n = tracks_->node(index);
      if (n->children.empty()) {
        if (n->payload >= 0 && size_t(n->payload) < hidden.size())
          hidden[size_t(n->payload)] = under_collapsed;
      } else {
        walk(index, under_collapsed || !track_view_->isExpanded(index));
      }
    }
  };
  walk({}, false);
  timeline_->set_hidden_tracks(std::move(hidden));
}

QString CaptureView::tooltip_extra(size_t track, int64_t event) const {
  if (!reader_ || !timeline_data_ || !timeline_data_->has_events) return {};
  QStringList lines;
  const EventDetails d = event_details(*reader_, *timeline_data_, track, event);
  std::map<std::string, std::string> field(d.fields.begin(), d.fields.end());
  auto triple = [&](const char* a, const char* b, const char* c) {
    return QString("%1×%2×%3")
        .arg(QString::fromStdString(field[a]), QString::fromStdString(field[b]),
             QString::fromStdString(field[c]));
  };
  if (field.count("gridX"))
    lines << "grid " + triple("gridX", "gridY", "gridZ") + " · block " +
                 triple("blockX", "blockY", "blockZ");
  if (field.count("bytes"))
    lines << QString::fromStdString(analyzer::format_bytes(std::stoll(field["bytes"])));
  if (d.correlation) {
    QString corr = QString("correlation %1").arg(*d.correlation);
    if (const auto flow = event_flow(*reader_, *timeline_data_, track, event)) {
      const bool is_launch = flow->launch_track == track && flow->launch_event == event;
      const size_t other_track = is_launch ? flow->gpu_track : flow->launch_track;
      const int64_t other = is_launch ? flow->gpu_event : flow->launch_event;
      const auto& e = timeline_data_->events[other_track];
      corr += QString(is_launch ? " → launches %1 on %2" : " ← launched by %1 on %2")
                  .arg(QString::fromStdString(timeline_data_->name(e.name[size_t(other)])),
                       QString::fromStdString(timeline_data_->tracks[other_track].label));
    }
    lines << corr;
  }
  return lines.join("\n");
}

CaptureView::~CaptureView() = default;

QChart* CaptureView::utilization_chart() const {
  return utilization_->chart();
}
QChart* CaptureView::memory_chart() const {
  return memory_->chart();
}
QChart* CaptureView::step_chart() const {
  return steps_->chart();
}

std::optional<CaptureKey> CaptureView::capture_key() const {
  if (!timeline_data_) return std::nullopt;
  return CaptureKey{source_, timeline_data_->capture_id};
}

void CaptureView::set_session(SessionPtr session) {
  session_ = std::move(session);
  source_ = 0;
  reader_ = session_ && !session_->sources().empty() ? session_->reader(0) : nullptr;
  set_captures_filter({});
  timeline_data_.reset();
  analysis_.reset();
  timeline_->set_timeline(nullptr);
}

void CaptureView::set_captures_filter(const std::vector<CaptureKey>& keys) {
  captures_->clear();
  if (!session_) return;
  for (size_t i = 0; i < session_->captures.size(); ++i) {
    const CaptureKey& key = session_->captures[i];
    if (!keys.empty() && std::find(keys.begin(), keys.end(), key) == keys.end()) continue;
    const store::Capture* c = session_->capture(key);
    QString text = QString::fromStdString(session_->capture_label(key));
    if (c)
      text += QString(": %1 (%2)")
                  .arg(QString::fromStdString(c->source_path), QString::fromStdString(c->source));
    captures_->addItem(text, int(i));
  }
  select_current_capture();
}

void CaptureView::select_current_capture() {
  const auto key = capture_key();
  if (!key || !session_) return;
  const auto it = std::find(session_->captures.begin(), session_->captures.end(), *key);
  if (it == session_->captures.end()) return;
  const int index = captures_->findData(int(it - session_->captures.begin()));
  if (index >= 0) captures_->setCurrentIndex(index);
}

void CaptureView::set_timeline(TimelinePtr timeline, size_t source) {
  if (session_ && source != source_ && source < session_->sources().size()) {
    reader_ = session_->reader(source);
  }
  source_ = source;
  timeline_data_ = timeline;
  timeline_->set_timeline(timeline);
  if (timeline) {
    tracks_->set_tracks(timeline->tracks, timeline->events);
    track_view_->expandAll();  // a new model: every group open again, every row shown
    update_hidden_tracks();
    track_view_->resizeColumnToContents(0);
    select_current_capture();
    status_->setText(
        timeline->complete() ? QString("%1 tracks, %2 events")
                                   .arg(timeline->tracks.size())
                                   .arg(timeline->event_count())
        : timeline->has_events
            ? QString("%1 tracks, the first %2 events (the rest loading…)")
                  .arg(timeline->tracks.size())
                  .arg(timeline->event_count())
            : QString("%1 tracks (zoom summary; events loading…)").arg(timeline->tracks.size()));
  }
  if (analysis_ && capture_key() != std::optional<CaptureKey>(analysis_->key)) analysis_.reset();
  update_charts();
  update_step_chart();
  update_critical_path();
}

void CaptureView::set_analysis(CaptureAnalysisPtr analysis) {
  if (analysis && capture_key() != std::optional<CaptureKey>(analysis->key)) return;
  analysis_ = std::move(analysis);
  update_charts();
  update_step_chart();
  update_critical_path();
}

void CaptureView::update_critical_path() {
  const CaptureAnalysis* ca = current_analysis();
  const bool computed = ca && ca->critical_path.computed;
  // The events are located again when raw events arrive (a first part, then all).
  critical_events_ = computed ? gui::critical_path_events(ca->critical_events, timeline_data_.get())
                              : std::vector<EvidenceEvent>{};
  const int64_t origin = timeline_data_ ? timeline_data_->span.begin : 0;
  critical_model_->set_origin(origin);
  critical_model_->set_rows(critical_events_);
  critical_table_->resizeColumnsToContents();
  critical_summary_->setText(
      !ca ? QString("The critical path comes with the capture's analysis (for a capture of over "
                    "%L1 events: Findings tab, Analyze).")
                .arg(Loader::kAutoAnalysisMaxEvents)
          : QString::fromStdString(gui::critical_path_summary(ca->critical_path, origin)));
  critical_toggle_->setEnabled(computed);
  if (critical_toggle_->isChecked()) {
    if (computed)
      mark_critical_path(true);  // the located events' marks, the view stays
    else
      critical_toggle_->setChecked(false);  // clears the marks
  }
}

void CaptureView::show_critical_path(bool on) {
  if (!mark_critical_path(on)) return;
  const analyzer::Interval window = current_analysis()->critical_path.window;
  const int64_t margin = std::max<int64_t>(window.length() / 20, 1000);
  timeline_->show_range({window.begin - margin, std::max(window.end, window.begin + 1) + margin});
}

bool CaptureView::mark_critical_path(bool on) {
  const CaptureAnalysis* ca = current_analysis();
  if (!on || !ca || !ca->critical_path.computed) {
    timeline_->set_marked_events({});
    timeline_->set_highlights({});
    return false;
  }
  std::vector<EventRef> marked;
  for (const EvidenceEvent& e : critical_events_)
    if (e.track) marked.push_back({*e.track, e.event});
  timeline_->set_marked_events(std::move(marked));
  const TimeRange window{
      ca->critical_path.window.begin,
      std::max(ca->critical_path.window.end, ca->critical_path.window.begin + 1)};
  timeline_->set_highlights({window});
  return true;
}
const CaptureAnalysis* CaptureView::current_analysis() const {
  return analysis_.get();
}

void CaptureView::update_flame_graph() {
  // Only while shown: the tree walks every CPU op of the visible range.
  if (bottom_->currentWidget() == flame_page_)
    flame_->set_range(timeline_data_, timeline_->view().visible());
}

void CaptureView::update_visible_summary() {
  // Only while shown: it walks every event of the visible range.
  if (bottom_->currentWidget() != visible_page_) return;
  if (!timeline_data_ || !timeline_data_->has_events) {
    visible_summary_->set_rows({});
    return;
  }
  const TimeRange visible = timeline_->view().visible();
  visible_summary_->set_range_length(visible.length());
  visible_summary_->set_rows(aggregate_range(*timeline_data_, visible));
}

void CaptureView::update_charts() {
  update_flame_graph();
  update_visible_summary();
  QChart* util = utilization_->chart();
  QChart* mem = memory_->chart();
  util->removeAllSeries();
  mem->removeAllSeries();
  for (auto* a : util->axes()) util->removeAxis(a), delete a;
  for (auto* a : mem->axes()) mem->removeAxis(a), delete a;
  const CaptureAnalysis* ca = current_analysis();
  if (!timeline_data_) return;
  const TimeRange vis = timeline_->view().visible();
  // One unit for both charts, picked from the visible length (as the timeline's ruler does).
  const analyzer::TimeAxis axis{vis.begin, vis.end, 0, 1};
  const double unit = double(analyzer::time_unit_ns(axis.unit()));
  auto ms = [&](int64_t ns) { return double(ns - vis.begin) / unit; };
  auto* x_util = new QValueAxis;
  x_util->setRange(0, ms(vis.end));
  x_util->setTitleText(
      QString("%1 from visible start").arg(analyzer::time_unit_suffix(axis.unit())));
  auto* y_util = new QValueAxis;
  y_util->setRange(0, 100);
  y_util->setLabelFormat("%d %%");
  util->addAxis(x_util, Qt::AlignBottom);
  util->addAxis(y_util, Qt::AlignLeft);
  // Before the analysis (a large capture waits for Analyze) the chart reads the kernels the
  // timeline holds; the utilization is the analyzer's function of their union either way.
  TimelineKernelBusy from_timeline;
  if (!ca) from_timeline = timeline_kernel_busy(*timeline_data_, vis);
  util->setTitle(ca ? "Kernel utilization over time (visible range)"
                 : from_timeline.from_summary
                     ? "Kernel utilization over time (visible range; not analysed yet: from the "
                       "timeline summary, gaps under 1 µs count as busy)"
                     : "Kernel utilization over time (visible range; not analysed yet: from the "
                       "timeline's events)");
  for (const auto& [device, kernels] : ca ? ca->kernel_busy : from_timeline.by_device) {
    auto* series = new QLineSeries;
    series->setName(QString("GPU %1").arg(device));
    for (const auto& b : analyzer::gpu_utilization_timeline(kernels, {vis.begin, vis.end})) {
      series->append(ms(b.bucket.begin), 100 * b.utilization);
      series->append(ms(b.bucket.end), 100 * b.utilization);
    }
    util->addSeries(series);
    series->attachAxis(x_util);
    series->attachAxis(y_util);
  }
  if (!ca) {  // the memory chart reads the analysis' memory events
    mem->setTitle("Allocated device memory: not analysed yet (Findings tab, Analyze)");
    return;
  }
  auto* x_mem = new QValueAxis;
  x_mem->setRange(0, ms(vis.end));
  auto* y_mem = new QValueAxis;
  y_mem->setTitleText("MiB");
  mem->addAxis(x_mem, Qt::AlignBottom);
  mem->addAxis(y_mem, Qt::AlignLeft);
  double top = 1;
  for (const auto& [device, points] : ca->memory) {
    auto* series = new QLineSeries;
    series->setName(QString("GPU %1").arg(device));
    double last = 0;
    for (const auto& pt : points) {
      const double mib = double(pt.bytes) / (1 << 20);
      if (pt.ts < vis.begin) {
        last = mib;
        continue;
      }
      if (pt.ts >= vis.end) break;
      if (series->count() == 0) series->append(0, last);
      series->append(ms(pt.ts), last);
      series->append(ms(pt.ts), mib);
      last = mib;
      top = std::max(top, mib);
    }
    if (series->count() == 0) series->append(0, last);
    series->append(ms(vis.end), last);
    top = std::max(top, last);
    mem->addSeries(series);
    series->attachAxis(x_mem);
    series->attachAxis(y_mem);
  }
  y_mem->setRange(0, top * 1.1);
  if (ca->memory.empty())
    mem->setTitle("Allocated device memory: no memory events in this capture");
  else
    mem->setTitle("Allocated device memory (visible range)");
}

void CaptureView::update_step_chart() {
  QChart* chart = steps_->chart();
  chart->removeAllSeries();
  for (auto* a : chart->axes()) chart->removeAxis(a), delete a;
  const CaptureAnalysis* ca = current_analysis();
  if (!ca) return;
  if (ca->steps.empty()) {
    chart->setTitle("Step time breakdown: no profiler steps in this capture");
    return;
  }
  // Readable at the tab's height: short labels ("#12"), at most 12 steps, the legend below in a
  // small font (the labels were elided to "..." and the legend cut).
  const size_t shown = std::min<size_t>(ca->steps.size(), 12);
  chart->setTitle(QString("Step time breakdown (profiler plugin), ms: steps %1–%2 of %3")
                      .arg(ca->steps.front().step)
                      .arg(ca->steps[shown - 1].step)
                      .arg(ca->steps.size()));
  chart->legend()->setAlignment(Qt::AlignBottom);
  QFont legend_font = chart->legend()->font();
  legend_font.setPointSizeF(std::max(6.0, legend_font.pointSizeF() * 0.8));
  chart->legend()->setFont(legend_font);
  const char* names[] = {"kernel",  "memcpy",     "memset", "communication",
                         "runtime", "DataLoader", "CPU op", "other"};
  QList<QBarSet*> sets;
  for (const char* n : names) sets << new QBarSet(n);
  QStringList categories;
  for (size_t i = 0; i < shown; ++i) {
    const auto& s = ca->steps[i];
    categories << QString("#%1").arg(s.step);
    const int64_t parts[] = {s.kernel_ns,  s.memcpy_ns,     s.memset_ns, s.communication_ns,
                             s.runtime_ns, s.dataloader_ns, s.cpu_op_ns, s.other_ns};
    for (int k = 0; k < 8; ++k) *sets[k] << double(parts[k]) / 1e6;
  }
  auto* series = new QHorizontalStackedBarSeries;
  series->append(sets);
  chart->addSeries(series);
  auto* y = new QBarCategoryAxis;
  y->append(categories);
  y->setLabelsFont(legend_font);
  auto* x = new QValueAxis;
  chart->addAxis(y, Qt::AlignLeft);
  chart->addAxis(x, Qt::AlignBottom);
  series->attachAxis(y);
  series->attachAxis(x);
}

void CaptureView::on_range_selected(TimeRange range) {
  if (!timeline_data_) return;
  aggregate_->set_range_length(range.length());
  aggregate_->set_rows(aggregate_range(*timeline_data_, range));
  aggregate_table_->resizeColumnsToContents();
  aggregate_table_->setColumnWidth(
      AggregateModel::name, std::min(aggregate_table_->columnWidth(AggregateModel::name), 480));
  bottom_->setCurrentIndex(0);
}

void CaptureView::on_event_selected(size_t track, qint64 event) {
  if (!timeline_data_ || !reader_) return;
  const EventDetails d = event_details(*reader_, *timeline_data_, track, event);
  details_->set_rows(d.fields);
  const auto flow = event_flow(*reader_, *timeline_data_, track, event);
  timeline_->set_flow(flow);
  if (flow) {
    const auto& l = timeline_data_->events[flow->launch_track];
    const auto& g = timeline_data_->events[flow->gpu_track];
    const auto li = size_t(flow->launch_event), gi = size_t(flow->gpu_event);
    flow_label_->setText(
        QString("Flow: %1 on %2 → %3 on %4; launch-to-start %5")
            .arg(QString::fromStdString(timeline_data_->name(l.name[li])),
                 QString::fromStdString(timeline_data_->tracks[flow->launch_track].label),
                 QString::fromStdString(timeline_data_->name(g.name[gi])),
                 QString::fromStdString(timeline_data_->tracks[flow->gpu_track].label),
                 format_duration(g.start[gi] - l.start[li])));
  } else {
    flow_label_->setText(d.correlation ? "Flow: the other end of this launch is not in this capture"
                                       : "Flow: none (no correlation id)");
  }
  bottom_->setCurrentIndex(1);
}

}  // namespace fleetscope::gui
