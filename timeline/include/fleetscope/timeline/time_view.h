// The timeline's visible time range and its mapping onto pixels, with zoom, pan and a zoom
// history: a pure struct (no Qt) so the arithmetic is tested alone (tests/gui/time_view_test.cpp).
//
//   x(ns)   = (ns − begin) · width / (end − begin)          (pixel 0 is the left edge of the area)
//   ns(x)   = begin + x · (end − begin) / width, rounded to the nearest ns
// Zoom keeps the time under the cursor at the same pixel (as Perfetto and hotspot do); pan moves
// by pixels. The range never leaves the bounds (the capture's span) and never gets shorter than
// `min_span_ns` nor wider than the bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fleetscope::timeline {

struct TimeRange {
  int64_t begin = 0, end = 0;  // [begin, end)
  int64_t length() const { return end - begin; }
  bool operator==(const TimeRange&) const = default;
};

class TimeView {
 public:
  TimeView() = default;
  TimeView(TimeRange bounds, double width_px);

  const TimeRange& bounds() const { return bounds_; }
  const TimeRange& visible() const { return visible_; }
  double width() const { return width_; }
  void set_width(double width_px);
  // Sets the visible range (clamped to the bounds); recorded in the history when it changes.
  void show(TimeRange range);
  void show_all() { show(bounds_); }

  double to_pixel(int64_t ns) const;
  int64_t to_time(double px) const;
  double ns_per_pixel() const;

  // factor > 1 zooms in (the range gets shorter by that factor), around pixel `anchor_px`.
  void zoom(double factor, double anchor_px);
  // Moves the range by `dx_px` pixels (positive: later times come into view).
  void pan(double dx_px);

  // Back to the range before the last show()/zoom()/pan() step that was recorded; false when the
  // history is empty. Consecutive wheel/pan steps are one history entry (see begin_gesture()).
  bool back();
  // Starts a new history entry on the next change (a mouse press, a key press, a selection).
  void begin_gesture() { gesture_open_ = false; }
  size_t history_size() const { return history_.size(); }

  static constexpr int64_t min_span_ns = 100;

 private:
  TimeRange clamp(TimeRange range) const;
  void set_visible(TimeRange range);
  TimeRange bounds_{0, 1};
  TimeRange visible_{0, 1};
  double width_ = 1;
  std::vector<TimeRange> history_;
  bool gesture_open_ = false;
};

}  // namespace fleetscope::timeline
