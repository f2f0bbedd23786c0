#include "timeline_widget.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "colors.h"
#include "fleetscope/analyzer/time_axis.h"
#include "fleetscope/store/rows.h"
#include "table_model.h"

namespace fleetscope::gui {

TimelineWidget::TimelineWidget(QWidget* parent) : QWidget(parent) {
  qRegisterMetaType<TimeRange>();
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(false);
  setMinimumSize(400, 150);
  setAttribute(Qt::WA_OpaquePaintEvent);
}

void TimelineWidget::set_timeline(TimelinePtr timeline) {
  const bool same_capture = timeline_ && timeline &&
                            timeline_->capture_id == timeline->capture_id &&
                            timeline_->span == timeline->span;
  timeline_ = std::move(timeline);
  if (!same_capture) {
    view_ =
        TimeView(timeline_ ? timeline_->span : TimeRange{0, 1}, std::max(1, width() - label_width));
    selection_.reset();
    selected_.reset();
    flow_.reset();
    scroll_rows_ = 0;
  } else if (selected_ && !timeline_->has_events) {
    selected_.reset();
  }
  changed();
}

void TimelineWidget::changed() {
  update();
  emit visible_range_changed(view_.visible());
}

int TimelineWidget::row_top(size_t track) const {
  const int row = int(track) - scroll_rows_;
  if (row < 0) return -1;
  const int y = ruler_height + row * row_height;
  return y < height() ? y : -1;
}

std::optional<size_t> TimelineWidget::track_at(int y) const {
  if (!timeline_ || y < ruler_height) return std::nullopt;
  const size_t t = size_t((y - ruler_height) / row_height + scroll_rows_);
  if (t >= timeline_->tracks.size()) return std::nullopt;
  return t;
}

void TimelineWidget::scroll_to_track(size_t track) {
  const int visible_rows = std::max(1, (height() - ruler_height) / row_height);
  if (int(track) < scroll_rows_ || int(track) >= scroll_rows_ + visible_rows)
    scroll_rows_ = std::max(0, int(track) - visible_rows / 2);
  update();
}

void TimelineWidget::show_range(TimeRange range) {
  view_.show(range);
  changed();
}

bool TimelineWidget::back() {
  const bool ok = view_.back();
  if (ok) changed();
  return ok;
}

void TimelineWidget::set_highlights(std::vector<TimeRange> windows) {
  highlights_ = std::move(windows);
  update();
}

void TimelineWidget::set_selection(std::optional<TimeRange> range) {
  selection_ = range;
  update();
  if (range) emit range_selected(*range);
}

void TimelineWidget::select_event(size_t track, int64_t event) {
  selected_ = {track, event};
  update();
  emit event_selected(track, event);
}

void TimelineWidget::set_flow(std::optional<Flow> flow) {
  flow_ = flow;
  update();
}

void TimelineWidget::resizeEvent(QResizeEvent*) {
  view_.set_width(std::max(1, width() - label_width));
  emit visible_range_changed(view_.visible());
}

void TimelineWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(250, 250, 250));
  const int area = width() - label_width;
  if (!timeline_) {
    p.setPen(Qt::gray);
    p.drawText(rect(), Qt::AlignCenter,
               "Open a trace database or a Kineto/nsys trace (File > Open)");
    return;
  }
  const TimelineData& data = *timeline_;
  // Ruler.
  analyzer::TimeAxis axis{view_.visible().begin, view_.visible().end, double(label_width),
                          double(width())};
  p.fillRect(QRect(0, 0, width(), ruler_height), QColor(235, 235, 240));
  p.setPen(QColor(90, 90, 90));
  QFont small = font();
  small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
  p.setFont(small);
  for (const auto& tick : axis.ticks(std::max(2, area / 110))) {
    p.drawLine(QPointF(tick.px, ruler_height - 6), QPointF(tick.px, ruler_height));
    p.drawText(QPointF(tick.px + 3, ruler_height - 8), QString::fromStdString("+" + tick.label));
  }
  p.setClipRect(QRect(0, ruler_height, width(), height() - ruler_height));
  // Rows.
  for (size_t t = size_t(std::max(0, scroll_rows_)); t < data.tracks.size(); ++t) {
    const int y = row_top(t);
    if (y < 0) break;
    if (t % 2) p.fillRect(QRect(0, y, width(), row_height), QColor(243, 243, 246));
    p.setClipRect(QRect(label_width, y, area, row_height));
    for (const DrawSpan& s : data.spans(t, view_)) {
      const QRectF r(label_width + s.x0, y + 2, s.x1 - s.x0, row_height - 4);
      const QColor c = event_color(s.kind, data.name(s.name));
      p.fillRect(r, c);
      if (r.width() > 40) {
        // A merged run mixes events: it says how many, not the name of one of them.
        const QString text = s.count == 1 ? QString::fromStdString(data.name(s.name))
                                          : QString("%1 events").arg(s.count);
        p.setPen(Qt::black);
        p.drawText(r.adjusted(2, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                   p.fontMetrics().elidedText(text, Qt::ElideRight, int(r.width()) - 4));
      }
    }
    p.setClipRect(QRect(0, ruler_height, width(), height() - ruler_height));
    p.setPen(QColor(40, 40, 40));
    const Track& track = data.tracks[t];
    const QString label = QString::fromStdString(track.label);
    p.fillRect(QRect(0, y, label_width, row_height),
               t % 2 ? QColor(232, 232, 238) : QColor(240, 240, 244));
    p.drawText(QRect(4, y, label_width - 8, row_height), Qt::AlignVCenter | Qt::AlignLeft,
               p.fontMetrics().elidedText(label, Qt::ElideLeft, label_width - 8));
  }
  p.setClipRect(QRect(label_width, 0, area, height()));
  // Finding windows, then the selected range.
  for (const TimeRange& w : highlights_) {
    const double x0 = x_of(w.begin), x1 = std::max(x_of(w.end), x0 + 2);
    p.fillRect(QRectF(x0, ruler_height, x1 - x0, height()), QColor(255, 140, 0, 38));
    p.setPen(QColor(230, 110, 0));
    p.drawLine(QPointF(x0, ruler_height), QPointF(x0, height()));
  }
  if (selection_) {
    const double x0 = x_of(selection_->begin), x1 = x_of(selection_->end);
    p.fillRect(QRectF(x0, 0, x1 - x0, height()), QColor(60, 120, 220, 45));
    p.setPen(QColor(60, 120, 220));
    p.drawText(QRectF(x0 + 2, 0, std::max(60.0, x1 - x0), ruler_height), Qt::AlignBottom,
               format_duration(selection_->length()));
  }
  auto event_rect = [&](size_t track, int64_t event) -> std::optional<QRectF> {
    const int y = row_top(track);
    if (y < 0 || !data.has_events || size_t(event) >= data.events[track].size())
      return std::nullopt;
    const auto& e = data.events[track];
    const double x0 = x_of(e.start[size_t(event)]);
    return QRectF(x0, y + 1, std::max(2.0, x_of(e.end[size_t(event)]) - x0), row_height - 2);
  };
  if (selected_)
    if (auto r = event_rect(selected_->first, selected_->second)) {
      p.setPen(QPen(Qt::black, 2));
      p.drawRect(*r);
    }
  if (flow_) {
    auto a = event_rect(flow_->launch_track, flow_->launch_event);
    auto b = event_rect(flow_->gpu_track, flow_->gpu_event);
    if (a && b) {
      const QPointF from(a->left(), a->center().y()), to(b->left(), b->center().y());
      QPainterPath path(from);
      path.cubicTo(from + QPointF(30, 0), to - QPointF(30, 0), to);
      p.setPen(QPen(QColor(200, 30, 30), 1.5));
      p.drawPath(path);
      p.setBrush(QColor(200, 30, 30));
      p.drawPolygon(QPolygonF({to, to + QPointF(-7, -4), to + QPointF(-7, 4)}));
    }
  }
}

void TimelineWidget::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (event->modifiers() & Qt::ShiftModifier) {
    const int rows = timeline_ ? int(timeline_->tracks.size()) : 0;
    scroll_rows_ = std::clamp(scroll_rows_ - int(std::round(steps * 3)), 0, std::max(0, rows - 1));
    update();
  } else {
    view_.zoom(std::pow(1.25, steps), event->position().x() - label_width);
    changed();
  }
  event->accept();
}

void TimelineWidget::mousePressEvent(QMouseEvent* event) {
  setFocus();
  view_.begin_gesture();
  drag_x_ = event->position().x();
  dragged_ = false;
  const bool select =
      event->button() == Qt::RightButton ||
      (event->button() == Qt::LeftButton && (event->modifiers() & Qt::ShiftModifier));
  drag_ = select ? Drag::select : event->button() == Qt::LeftButton ? Drag::pan : Drag::none;
  drag_anchor_ns_ = view_.to_time(drag_x_ - label_width);
}

void TimelineWidget::mouseMoveEvent(QMouseEvent* event) {
  const double x = event->position().x();
  if (std::abs(x - drag_x_) > 2) dragged_ = true;
  if (drag_ == Drag::pan && dragged_) {
    view_.pan(drag_x_ - x);
    drag_x_ = x;
    changed();
  } else if (drag_ == Drag::select && dragged_) {
    const int64_t now = view_.to_time(x - label_width);
    selection_ = TimeRange{std::min(now, drag_anchor_ns_), std::max(now, drag_anchor_ns_)};
    update();
  }
}

void TimelineWidget::mouseReleaseEvent(QMouseEvent* event) {
  if (drag_ == Drag::select && dragged_ && selection_) {
    emit range_selected(*selection_);
  } else if (!dragged_ && event->button() == Qt::LeftButton && timeline_) {
    if (auto t = track_at(int(event->position().y())); t && event->position().x() >= label_width) {
      const int64_t ns = view_.to_time(event->position().x() - label_width);
      const int64_t slack = int64_t(2 * view_.ns_per_pixel());
      const int64_t e = timeline_->event_at(*t, ns, slack);
      if (e >= 0) select_event(*t, e);
    }
  }
  drag_ = Drag::none;
  view_.begin_gesture();
}

void TimelineWidget::keyPressEvent(QKeyEvent* event) {
  const double centre = view_.width() / 2;
  view_.begin_gesture();
  switch (event->key()) {
    case Qt::Key_W:
      view_.zoom(1.5, centre);
      break;
    case Qt::Key_S:
      view_.zoom(1 / 1.5, centre);
      break;
    case Qt::Key_A:
      view_.pan(-view_.width() / 8);
      break;
    case Qt::Key_D:
      view_.pan(view_.width() / 8);
      break;
    case Qt::Key_Backspace:
      view_.back();
      break;
    case Qt::Key_Escape:
      selection_.reset();
      selected_.reset();
      flow_.reset();
      update();
      return;
    default:
      QWidget::keyPressEvent(event);
      return;
  }
  view_.begin_gesture();
  changed();
}

}  // namespace fleetscope::gui
