#include "fleetscope/timeline/time_view.h"

#include <algorithm>
#include <cmath>

namespace fleetscope::timeline {

TimeView::TimeView(TimeRange bounds, double width_px) {
  if (bounds.end <= bounds.begin) bounds.end = bounds.begin + 1;
  bounds_ = bounds;
  visible_ = bounds;
  set_width(width_px);
}

void TimeView::set_width(double width_px) {
  width_ = std::max(1.0, width_px);
}

double TimeView::to_pixel(int64_t ns) const {
  return double(ns - visible_.begin) * width_ / double(visible_.length());
}

int64_t TimeView::to_time(double px) const {
  return visible_.begin + std::llround(px * double(visible_.length()) / width_);
}

double TimeView::ns_per_pixel() const {
  return double(visible_.length()) / width_;
}

TimeRange TimeView::clamp(TimeRange r) const {
  const int64_t max_len = bounds_.length();
  const int64_t min_len = std::min<int64_t>(min_span_ns, max_len);
  int64_t len = std::clamp<int64_t>(r.end - r.begin, min_len, max_len);
  int64_t begin = std::clamp<int64_t>(r.begin, bounds_.begin, bounds_.end - len);
  return {begin, begin + len};
}

void TimeView::set_visible(TimeRange range) {
  range = clamp(range);
  if (range == visible_) return;
  if (!gesture_open_) history_.push_back(visible_);
  gesture_open_ = true;
  visible_ = range;
}

void TimeView::show(TimeRange range) {
  begin_gesture();
  set_visible(range);
  begin_gesture();
}

void TimeView::zoom(double factor, double anchor_px) {
  if (!(factor > 0)) return;
  const int64_t anchor = to_time(anchor_px);
  const double len = double(visible_.length()) / factor;
  const double left = (anchor_px / width_) * len;
  const int64_t begin = anchor - std::llround(left);
  set_visible({begin, begin + std::max<int64_t>(1, std::llround(len))});
}

void TimeView::pan(double dx_px) {
  const int64_t shift = std::llround(dx_px * ns_per_pixel());
  set_visible({visible_.begin + shift, visible_.end + shift});
}

bool TimeView::back() {
  if (history_.empty()) return false;
  visible_ = history_.back();
  history_.pop_back();
  gesture_open_ = false;
  return true;
}

}  // namespace fleetscope::timeline
