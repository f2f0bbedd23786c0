// The capture timeline: an overview strip of the whole capture, an absolute ruler (offsets from the
// capture's start), then the tracks, each a stack of rows by nesting depth (RowLayout), with a
// vertical scrollbar; custom painting of the visible range and rows only. Each paint asks
// TimelineData::spans() for the per-pixel-merged runs of each visible row, so the cost is
// O(width × visible rows) at any zoom level. Step bands (the iterations track) shade every row.
//
// Input (as in Perfetto, nsys and hotspot): wheel zooms around the cursor, Shift+wheel scrolls
// the rows, left drag pans, Shift+left drag (or right drag) selects a range, click selects an
// event (details and flow), hover shows the event's tooltip, W/S zoom in/out, A/D pan, Z zooms to
// the selection (range or event), Backspace goes back in the zoom history, Escape clears the
// selection; a click or drag in the overview strip moves the view there.
#pragma once

#include <QRegularExpression>
#include <QWidget>
#include <functional>
#include <optional>
#include <set>
#include <vector>

#include "event_details.h"
#include "fleetscope/timeline/row_layout.h"
#include "loader.h"
#include "time_view.h"

class QScrollBar;

namespace fleetscope::gui {

// One event of a track (TimelineData::events index).
struct EventRef {
  size_t track = 0;
  int64_t event = -1;
  bool operator==(const EventRef&) const = default;
  bool operator<(const EventRef& o) const {
    return track != o.track ? track < o.track : event < o.event;
  }
};

class TimelineWidget : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineWidget(QWidget* parent = nullptr);

  void set_timeline(TimelinePtr timeline);
  // What the empty widget says (no capture open, or a database without captures).
  void set_placeholder(const QString& text);
  QString placeholder() const { return placeholder_; }
  const TimelineData* timeline() const { return timeline_.get(); }
  TimeView& view() { return view_; }
  const TimeView& view() const { return view_; }

  // Geometry (also used by the tests): the time area starts at label_width, the rows at
  // header_height (below the overview strip and the ruler).
  static constexpr int label_width = 200, overview_height = 26, ruler_height = 22,
                       header_height = overview_height + ruler_height, row_height = 18,
                       track_gap = 3;
  double x_of(int64_t ns) const { return label_width + view_.to_pixel(ns); }
  int time_area_width() const;
  // Top of a track's row in widget pixels, -1 when hidden or scrolled out.
  int row_top(size_t track, size_t depth = 0) const;
  std::optional<size_t> track_at(int y) const;
  std::optional<RowSlot> row_at(int y) const;
  void scroll_to_track(size_t track, size_t depth = 0);
  int scroll_y() const { return scroll_y_; }
  QScrollBar* vertical_scrollbar() const { return vbar_; }
  // Per track: true hides its rows (a collapsed group of the track tree).
  void set_hidden_tracks(std::vector<bool> hidden);
  const RowLayout& layout() const { return layout_; }

  void show_range(TimeRange range);  // recorded in the zoom history
  bool back();
  // Zooms to the selected range, else to the selected event (with a margin); false when neither.
  bool zoom_to_selection();
  void set_highlights(std::vector<TimeRange> windows);
  // Events to mark (a finding's offenders): outlined, with their names drawn in full colour.
  void set_marked_events(std::vector<EventRef> events);
  const std::set<EventRef>& marked_events() const { return marked_; }
  void set_selection(std::optional<TimeRange> range);
  std::optional<TimeRange> selection() const { return selection_; }
  void select_event(size_t track, int64_t event);
  std::optional<std::pair<size_t, int64_t>> selected_event() const { return selected_; }
  void set_flow(std::optional<Flow> flow);
  // Shows an event: selects it, scrolls to its row and pans (zooming out if needed) to it.
  void reveal_event(size_t track, int64_t event);

  // Search: events whose name contains `text` (or matches it as a regular expression) are
  // highlighted and the others faded; next/previous walk the matches in time order. Returns the
  // number of matches (an invalid expression matches nothing).
  size_t set_search(const QString& text, bool regex = false);
  size_t match_count() const { return matches_.size(); }
  // 0-based index of the current match, -1 when none was visited yet.
  int current_match() const { return current_match_; }
  bool next_match();
  bool previous_match();
  const std::vector<EventRef>& matches() const { return matches_; }

  // Extra lines for the hover tooltip of an event (launch <-> kernel correlation, arguments),
  // from the database: set by the capture view, which owns a reader.
  void set_tooltip_provider(std::function<QString(size_t track, int64_t event)> provider);
  // The tooltip text for a point of the widget ("" when no event is there).
  QString tooltip_at(QPoint pos) const;

 signals:
  void visible_range_changed(fleetscope::gui::TimeRange range);
  void range_selected(fleetscope::gui::TimeRange range);
  void event_selected(size_t track, qint64 event);
  void search_changed(int current, int count);
  // After each paint of a capture (has_events: its raw events were loaded), for --timing.
  void painted(bool has_events);

 protected:
  bool event(QEvent* event) override;
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;

 private:
  void changed();
  void relayout();
  void set_scroll(int y);
  void update_scrollbar();
  void build_overview();
  void paint_overview(QPainter& p);
  void paint_ruler(QPainter& p);
  void paint_step_bands(QPainter& p, int top, int bottom);
  void paint_rows(QPainter& p);
  void paint_loading(QPainter& p);
  void move_overview_to(double x);
  bool go_to_match(int index);
  std::optional<QRectF> event_rect(size_t track, int64_t event) const;
  bool matches_name(int32_t name) const;

  TimelinePtr timeline_;
  TimeView view_;
  RowLayout layout_;
  std::vector<bool> hidden_;
  int scroll_y_ = 0;
  QScrollBar* vbar_ = nullptr;
  QImage overview_;
  std::vector<TimeRange> highlights_;
  std::set<EventRef> marked_;
  std::optional<TimeRange> selection_;
  std::optional<std::pair<size_t, int64_t>> selected_;
  std::optional<Flow> flow_;
  enum class Drag { none, pan, select, overview } drag_ = Drag::none;
  double drag_x_ = 0;
  int64_t drag_anchor_ns_ = 0;
  bool dragged_ = false;
  // Search.
  std::vector<char> name_matches_;  // per name index: 1 when it matches
  bool searching_ = false;
  QString search_text_;
  bool search_regex_ = false;
  std::vector<EventRef> matches_;  // in time order
  int current_match_ = -1;
  std::function<QString(size_t, int64_t)> tooltip_provider_;
  QString placeholder_ = "Open a trace database or a Kineto/nsys trace (File > Open)";
};

}  // namespace fleetscope::gui

Q_DECLARE_METATYPE(fleetscope::gui::TimeRange)
