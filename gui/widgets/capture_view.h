// The capture view: a search bar (name or regular expression, next/previous, match count), the
// timeline with its track tree (collapsing a group hides its rows), utilization and memory charts
// that follow the timeline's visible range, the step breakdown chart, and below, the aggregate
// table of the selected range and the details and launch→kernel flow of the selected event.
#pragma once

#include <QWidget>
#include <memory>

#include "finding_evidence.h"
#include "loader.h"
#include "models.h"
#include "tree_model.h"

class QCheckBox;
class QComboBox;
class QLineEdit;
class QTableView;
class QTreeView;
class QLabel;
class QTimer;
class QTabWidget;
class QChartView;
class QChart;

namespace fleetscope::gui {

class TimelineWidget;
class FlameGraphWidget;

class CaptureView : public QWidget {
  Q_OBJECT
 public:
  explicit CaptureView(QWidget* parent = nullptr);
  ~CaptureView() override;

  void set_session(SessionPtr session);
  // The timeline of a capture of session source `source`.
  void set_timeline(TimelinePtr timeline, size_t source = 0);
  // The analysis of the capture shown (ignored when it is another capture's).
  void set_analysis(CaptureAnalysisPtr analysis);
  void set_captures_filter(const std::vector<CaptureKey>& captures);  // empty = all

  TimelineWidget* timeline() const { return timeline_; }
  AggregateModel* aggregate_model() const { return aggregate_; }
  KeyValueModel* details_model() const { return details_; }
  TrackModel* track_model() const { return tracks_; }
  QTreeView* track_view() const { return track_view_; }
  QLineEdit* search_field() const { return search_; }
  QCheckBox* search_regex() const { return search_regex_; }
  QLabel* search_status() const { return search_status_; }
  QLabel* flow_label() const { return flow_label_; }
  FlameGraphWidget* flame_graph() const { return flame_; }
  QComboBox* flame_order() const { return flame_order_; }
  QTabWidget* bottom_tabs() const { return bottom_; }
  // The kernels, API calls, copies, … of the visible range by total time (its own tab).
  AggregateModel* visible_summary_model() const { return visible_summary_; }
  QWidget* visible_summary_page() const { return visible_page_; }
  // The critical path of the capture's first iteration (HTA's, analyzer/critical_path.h): its
  // summary, its events (a click selects one on the timeline and brings it into view) and the
  // toggle that outlines them all on the timeline and shows the path's window.
  QWidget* critical_path_page() const { return critical_page_; }
  QCheckBox* critical_path_toggle() const { return critical_toggle_; }
  QLabel* critical_path_summary() const { return critical_summary_; }
  EvidenceModel* critical_path_model() const { return critical_model_; }
  QTableView* critical_path_table() const { return critical_table_; }
  const std::vector<EvidenceEvent>& critical_path_events() const { return critical_events_; }
  QChart* utilization_chart() const;
  QChart* memory_chart() const;
  QChart* step_chart() const;
  // The capture shown: its session source and id.
  std::optional<CaptureKey> capture_key() const;
  QComboBox* capture_choice() const { return captures_; }

 signals:
  // The user picked another capture: its index in the session's captures.
  void capture_requested(int index);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void update_charts();
  void update_hidden_tracks();
  QString tooltip_extra(size_t track, int64_t event) const;
  void update_step_chart();
  void on_range_selected(TimeRange range);
  void on_event_selected(size_t track, qint64 event);
  const CaptureAnalysis* current_analysis() const;
  void select_current_capture();

  SessionPtr session_;
  // GUI-thread connection to the shown capture's source, for details and flows.
  std::unique_ptr<store::Reader> reader_;
  size_t source_ = 0;
  TimelinePtr timeline_data_;
  CaptureAnalysisPtr analysis_;
  QComboBox* captures_ = nullptr;
  QLabel* status_ = nullptr;
  TimelineWidget* timeline_ = nullptr;
  QTreeView* track_view_ = nullptr;
  TrackModel* tracks_ = nullptr;
  QChartView* utilization_ = nullptr;
  QChartView* memory_ = nullptr;
  QChartView* steps_ = nullptr;
  AggregateModel* aggregate_ = nullptr;
  KeyValueModel* details_ = nullptr;
  QLabel* flow_label_ = nullptr;
  QTimer* chart_timer_ = nullptr;
  QTabWidget* bottom_ = nullptr;
  QTableView* aggregate_table_ = nullptr;
  QLineEdit* search_ = nullptr;
  FlameGraphWidget* flame_ = nullptr;
  QComboBox* flame_order_ = nullptr;
  QWidget* flame_page_ = nullptr;
  void update_flame_graph();
  void update_critical_path();
  void show_critical_path(bool on);  // marks (or clears) and goes to the path's window
  bool mark_critical_path(bool on);  // marks or clears; false when nothing is marked
  QWidget* critical_page_ = nullptr;
  QCheckBox* critical_toggle_ = nullptr;
  QLabel* critical_summary_ = nullptr;
  EvidenceModel* critical_model_ = nullptr;
  QTableView* critical_table_ = nullptr;
  std::vector<EvidenceEvent> critical_events_;
  void update_visible_summary();
  AggregateModel* visible_summary_ = nullptr;
  QWidget* visible_page_ = nullptr;
  QCheckBox* search_regex_ = nullptr;
  QLabel* search_status_ = nullptr;
};

}  // namespace fleetscope::gui
