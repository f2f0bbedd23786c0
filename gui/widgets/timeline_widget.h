// The capture timeline: one row per track (TimelineData order), a time ruler, custom painting of
// the visible range only. Each paint asks TimelineData::spans() for the per-pixel-merged runs of
// each visible row, so the cost is O(width × visible rows) at any zoom level.
//
// Input (as in Perfetto and hotspot): wheel zooms around the cursor, Shift+wheel scrolls the
// tracks, left drag pans, Shift+left drag (or right drag) selects a range, click selects an event,
// W/S zoom in/out, A/D pan, Backspace goes back in the zoom history, Escape clears the selection.
#pragma once

#include <QWidget>
#include <optional>
#include <vector>

#include "event_details.h"
#include "loader.h"
#include "time_view.h"

namespace fleetscope::gui {

class TimelineWidget : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineWidget(QWidget* parent = nullptr);

  void set_timeline(TimelinePtr timeline);
  const TimelineData* timeline() const { return timeline_.get(); }
  TimeView& view() { return view_; }
  const TimeView& view() const { return view_; }

  // Geometry (also used by the tests): the time area starts at label_width().
  static constexpr int label_width = 200, ruler_height = 24, row_height = 20;
  double x_of(int64_t ns) const { return label_width + view_.to_pixel(ns); }
  int row_top(size_t track) const;  // -1 when scrolled out
  std::optional<size_t> track_at(int y) const;
  void scroll_to_track(size_t track);

  void show_range(TimeRange range);  // recorded in the zoom history
  bool back();
  void set_highlights(std::vector<TimeRange> windows);
  void set_selection(std::optional<TimeRange> range);
  std::optional<TimeRange> selection() const { return selection_; }
  void select_event(size_t track, int64_t event);
  std::optional<std::pair<size_t, int64_t>> selected_event() const { return selected_; }
  void set_flow(std::optional<Flow> flow);

 signals:
  void visible_range_changed(fleetscope::gui::TimeRange range);
  void range_selected(fleetscope::gui::TimeRange range);
  void event_selected(size_t track, qint64 event);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;

 private:
  void changed();
  TimelinePtr timeline_;
  TimeView view_;
  int scroll_rows_ = 0;
  std::vector<TimeRange> highlights_;
  std::optional<TimeRange> selection_;
  std::optional<std::pair<size_t, int64_t>> selected_;
  std::optional<Flow> flow_;
  enum class Drag { none, pan, select } drag_ = Drag::none;
  double drag_x_ = 0;
  int64_t drag_anchor_ns_ = 0;
  bool dragged_ = false;
};

}  // namespace fleetscope::gui

Q_DECLARE_METATYPE(fleetscope::gui::TimeRange)
