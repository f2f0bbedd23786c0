#include "timeline_widget.h"

#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "colors.h"
#include "fleetscope/timeline/ruler.h"

namespace fleetscope::gui {

namespace {

// Searches keep at most this many matches (the faded/highlighted drawing covers all of them).
constexpr size_t max_matches = 1'000'000;

QString duration_text(int64_t ns) {
  return QString::fromStdString(timeline::format_duration_ns(ns));
}

// The step number of an iterations event named "step N" (its band's shade alternates with it).
int step_number(const std::string& name) {
  const auto space = name.rfind(' ');
  if (space == std::string::npos) return 0;
  try {
    return std::stoi(name.substr(space + 1));
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

TimelineWidget::TimelineWidget(QWidget* parent) : QWidget(parent) {
  qRegisterMetaType<TimeRange>();
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(true);  // hover tooltips
  setMinimumSize(400, 150);
  setAttribute(Qt::WA_OpaquePaintEvent);
  vbar_ = new QScrollBar(Qt::Vertical, this);
  vbar_->setSingleStep(row_height);
  connect(vbar_, &QScrollBar::valueChanged, this, [this](int v) {
    if (v != scroll_y_) {
      scroll_y_ = v;
      update();
    }
  });
}

int TimelineWidget::time_area_width() const {
  return std::max(1, width() - label_width - vbar_->sizeHint().width());
}

void TimelineWidget::set_timeline(TimelinePtr timeline) {
  // The same capture arriving in stages (summary or first part, then whole) keeps the view; the
  // selection only while the tracks stay the same (events keep their index: a first part holds
  // each track's first events in the same order).
  const bool same_capture = timeline_ && timeline &&
                            timeline_->capture_id == timeline->capture_id &&
                            (timeline_->span == timeline->span || !timeline_->complete());
  const bool same_tracks =
      same_capture && std::equal(timeline_->tracks.begin(), timeline_->tracks.end(),
                                 timeline->tracks.begin(), timeline->tracks.end(),
                                 [](const Track& a, const Track& b) { return a.key == b.key; });
  const TimeRange shown = view_.visible();
  const bool new_span = same_capture && timeline_->span != timeline->span;
  timeline_ = std::move(timeline);
  if (!same_capture) {
    view_ = TimeView(timeline_ ? timeline_->span : TimeRange{0, 1}, time_area_width());
    selection_.reset();
    selected_.reset();
    flow_.reset();
    marked_.clear();
    hidden_.clear();
    scroll_y_ = 0;
  } else {
    if (new_span) {
      view_ = TimeView(timeline_->span, time_area_width());
      view_.show(shown);
    }
    if (!same_tracks) {
      selected_.reset();
      flow_.reset();
      marked_.clear();
      hidden_.clear();
    } else if (selected_ && !timeline_->has_events) {
      selected_.reset();
    }
  }
  relayout();
  build_overview();
  if (searching_) set_search(search_text_, search_regex_);  // raw events arrived: search them
  changed();
}

void TimelineWidget::set_placeholder(const QString& text) {
  placeholder_ = text;
  update();
}

void TimelineWidget::changed() {
  update();
  emit visible_range_changed(view_.visible());
}

void TimelineWidget::relayout() {
  layout_ = timeline_ ? RowLayout(*timeline_, hidden_, row_height, track_gap) : RowLayout();
  update_scrollbar();
}

void TimelineWidget::update_scrollbar() {
  const int page = std::max(1, height() - header_height);
  vbar_->setGeometry(width() - vbar_->sizeHint().width(), header_height, vbar_->sizeHint().width(),
                     page);
  vbar_->setPageStep(page);
  vbar_->setRange(0, std::max(0, layout_.height() - page));
  set_scroll(scroll_y_);
}

void TimelineWidget::set_scroll(int y) {
  scroll_y_ = std::clamp(y, 0, vbar_->maximum());
  vbar_->setValue(scroll_y_);
  update();
}

void TimelineWidget::set_hidden_tracks(std::vector<bool> hidden) {
  hidden_ = std::move(hidden);
  relayout();
  update();
}

int TimelineWidget::row_top(size_t track, size_t depth) const {
  const auto top = layout_.top_of(track, depth);
  if (!top) return -1;
  const int y = header_height + *top - scroll_y_;
  return y + row_height <= header_height || y >= height() ? -1 : y;
}

std::optional<RowSlot> TimelineWidget::row_at(int y) const {
  if (!timeline_ || y < header_height) return std::nullopt;
  return layout_.row_at(y - header_height + scroll_y_);
}

std::optional<size_t> TimelineWidget::track_at(int y) const {
  if (auto r = row_at(y)) return r->track;
  return std::nullopt;
}

void TimelineWidget::scroll_to_track(size_t track, size_t depth) {
  const auto top = layout_.top_of(track, depth);
  if (!top) return;
  const int page = height() - header_height;
  if (*top < scroll_y_ || *top + row_height > scroll_y_ + page)
    set_scroll(*top - std::max(0, page / 3));
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

bool TimelineWidget::zoom_to_selection() {
  std::optional<TimeRange> target = selection_;
  if (!target && selected_ && timeline_ && timeline_->has_events) {
    const auto& e = timeline_->events[selected_->first];
    const auto i = size_t(selected_->second);
    const int64_t margin = std::max<int64_t>(50, (e.end[i] - e.start[i]) / 10);
    target = TimeRange{e.start[i] - margin, e.end[i] + margin};
  }
  if (!target || target->length() <= 0) return false;
  show_range(*target);
  return true;
}

void TimelineWidget::set_highlights(std::vector<TimeRange> windows) {
  highlights_ = std::move(windows);
  update();
}

void TimelineWidget::set_marked_events(std::vector<EventRef> events) {
  marked_ = std::set<EventRef>(events.begin(), events.end());
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

void TimelineWidget::reveal_event(size_t track, int64_t event) {
  if (!timeline_ || !timeline_->has_events || track >= timeline_->events.size() || event < 0)
    return;
  const auto& e = timeline_->events[track];
  const auto i = size_t(event);
  scroll_to_track(track, e.depth[i]);
  const TimeRange vis = view_.visible();
  const int64_t len = e.end[i] - e.start[i];
  if (len * 10 > vis.length() * 8) {
    const int64_t margin = std::max<int64_t>(50, len / 10);
    view_.show({e.start[i] - margin, e.end[i] + margin});
  } else if (e.start[i] < vis.begin || e.end[i] > vis.end) {
    const int64_t centre = e.start[i] + len / 2;
    view_.show({centre - vis.length() / 2, centre - vis.length() / 2 + vis.length()});
  }
  changed();
  select_event(track, event);
}

void TimelineWidget::set_flow(std::optional<Flow> flow) {
  flow_ = flow;
  update();
}

bool TimelineWidget::matches_name(int32_t name) const {
  return name >= 0 && size_t(name) < name_matches_.size() && name_matches_[size_t(name)];
}

size_t TimelineWidget::set_search(const QString& text, bool regex) {
  search_text_ = text;
  search_regex_ = regex;
  matches_.clear();
  name_matches_.clear();
  current_match_ = -1;
  searching_ = !text.isEmpty();
  if (searching_ && timeline_) {
    const QRegularExpression re(regex ? text : QRegularExpression::escape(text),
                                QRegularExpression::CaseInsensitiveOption);
    name_matches_.assign(timeline_->names.size(), 0);
    if (re.isValid())
      for (size_t n = 0; n < timeline_->names.size(); ++n)
        name_matches_[n] = re.match(QString::fromStdString(timeline_->names[n])).hasMatch();
    if (timeline_->has_events) {
      std::vector<std::pair<int64_t, EventRef>> found;
      for (size_t t = 0; t < timeline_->events.size() && found.size() < max_matches; ++t) {
        const auto& e = timeline_->events[t];
        for (size_t i = 0; i < e.size() && found.size() < max_matches; ++i)
          if (name_matches_[size_t(e.name[i])]) found.push_back({e.start[i], {t, int64_t(i)}});
      }
      std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first < b.first : a.second < b.second;
      });
      matches_.reserve(found.size());
      for (const auto& f : found) matches_.push_back(f.second);
    }
  }
  update();
  emit search_changed(current_match_, int(matches_.size()));
  return matches_.size();
}

bool TimelineWidget::go_to_match(int index) {
  if (matches_.empty()) return false;
  const int n = int(matches_.size());
  current_match_ = ((index % n) + n) % n;
  const EventRef m = matches_[size_t(current_match_)];
  reveal_event(m.track, m.event);
  emit search_changed(current_match_, n);
  return true;
}

bool TimelineWidget::next_match() {
  return go_to_match(current_match_ + 1);
}

bool TimelineWidget::previous_match() {
  return go_to_match(current_match_ < 0 ? -1 : current_match_ - 1);
}

void TimelineWidget::set_tooltip_provider(std::function<QString(size_t, int64_t)> provider) {
  tooltip_provider_ = std::move(provider);
}

QString TimelineWidget::tooltip_at(QPoint pos) const {
  if (!timeline_ || pos.x() < label_width || pos.x() >= label_width + time_area_width()) return {};
  const auto row = row_at(pos.y());
  if (!row) return {};
  const TimelineData& data = *timeline_;
  const int64_t ns = view_.to_time(pos.x() - label_width);
  const int64_t event =
      data.event_at(row->track, row->depth, ns, int64_t(2 * view_.ns_per_pixel()));
  if (event < 0) return {};
  const auto& e = data.events[row->track];
  const auto i = size_t(event);
  QString text = QString::fromStdString(data.name(e.name[i]));
  text += QString("\n%1 · %2")
              .arg(QString::fromUtf8(to_string(e.kind[i])), duration_text(e.end[i] - e.start[i]));
  text += QString("\nstarts at %1 from the capture start")
              .arg(QString::fromStdString(timeline::ruler_label(e.start[i] - data.span.begin, 1000,
                                                                e.start[i] - data.span.begin)));
  text += "\n" + QString::fromStdString(data.tracks[row->track].label);
  if (row->depth > 0) text += QString(" · depth %1").arg(row->depth);
  if (tooltip_provider_) {
    const QString extra = tooltip_provider_(row->track, event);
    if (!extra.isEmpty()) text += "\n" + extra;
  }
  return text;
}

bool TimelineWidget::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QString text = tooltip_at(help->pos());
    if (text.isEmpty()) {
      QToolTip::hideText();
      event->ignore();
    } else {
      QToolTip::showText(help->globalPos(), text, this);
    }
    return true;
  }
  return QWidget::event(event);
}

void TimelineWidget::resizeEvent(QResizeEvent*) {
  view_.set_width(time_area_width());
  update_scrollbar();
  build_overview();
  emit visible_range_changed(view_.visible());
}

void TimelineWidget::build_overview() {
  overview_ = QImage();
  if (!timeline_) return;
  const int w = time_area_width(), h = overview_height - 6;
  // Per pixel column, the share of GPU streams (top half) and of threads (bottom half) busy there.
  const TimeView full(timeline_->span, w);
  std::vector<double> gpu(size_t(w) + 2, 0), cpu(size_t(w) + 2, 0);
  double gpu_tracks = 0, cpu_tracks = 0;
  for (size_t t = 0; t < timeline_->tracks.size(); ++t) {
    const TrackKind kind = timeline_->tracks[t].key.kind;
    if (kind == TrackKind::iterations) continue;
    const bool is_gpu = kind == TrackKind::gpu_stream;
    (is_gpu ? gpu_tracks : cpu_tracks) += 1;
    auto& busy = is_gpu ? gpu : cpu;
    for (const DrawSpan& s : timeline_->spans(t, 0, full))
      for (int x = std::max(0, int(s.x0)); x < std::min(w, int(std::ceil(s.x1))); ++x)
        busy[size_t(x)] += 1;
  }
  overview_ = QImage(w, h, QImage::Format_ARGB32_Premultiplied);
  overview_.fill(QColor(246, 246, 250));
  QPainter p(&overview_);
  for (int x = 0; x < w; ++x) {
    const double g = gpu_tracks > 0 ? gpu[size_t(x)] / gpu_tracks : 0;
    const double c = cpu_tracks > 0 ? cpu[size_t(x)] / cpu_tracks : 0;
    if (g > 0) p.fillRect(QRectF(x, 0, 1, h / 2.0), QColor(60, 130, 60, int(60 + 195 * g)));
    if (c > 0) p.fillRect(QRectF(x, h / 2.0, 1, h / 2.0), QColor(70, 100, 180, int(60 + 195 * c)));
  }
}

void TimelineWidget::paint_overview(QPainter& p) {
  p.fillRect(QRect(0, 0, width(), overview_height), QColor(228, 228, 234));
  p.setPen(QColor(70, 70, 70));
  p.drawText(QRect(4, 0, label_width - 8, overview_height), Qt::AlignVCenter | Qt::AlignLeft,
             "Overview (GPU / CPU)");
  if (overview_.isNull()) return;
  p.drawImage(QPoint(label_width, 3), overview_);
  // The visible window on the whole capture.
  const TimeView full(timeline_->span, time_area_width());
  const double x0 = label_width + full.to_pixel(view_.visible().begin);
  const double x1 = label_width + full.to_pixel(view_.visible().end);
  p.setPen(QPen(QColor(30, 30, 30), 1.5));
  p.setBrush(QColor(255, 255, 255, 70));
  p.drawRect(QRectF(x0, 1, std::max(3.0, x1 - x0), overview_height - 2));
  p.setBrush(Qt::NoBrush);
}

void TimelineWidget::paint_ruler(QPainter& p) {
  const int top = overview_height;
  p.fillRect(QRect(0, top, width(), ruler_height), QColor(235, 235, 240));
  p.setPen(QColor(90, 90, 90));
  p.drawText(QRect(4, top, label_width - 8, ruler_height), Qt::AlignVCenter | Qt::AlignLeft,
             "from capture start");
  const int area = time_area_width();
  for (const auto& tick :
       timeline::ruler_ticks(view_, timeline_->span.begin, std::max(2, area / 110))) {
    const double x = label_width + tick.px;
    p.drawLine(QPointF(x, top + ruler_height - 6), QPointF(x, top + ruler_height));
    p.drawText(QPointF(x + 3, top + ruler_height - 8), QString::fromStdString(tick.label));
  }
}

void TimelineWidget::paint_step_bands(QPainter& p, int top, int bottom) {
  const TimelineData& data = *timeline_;
  for (size_t t = 0; t < data.tracks.size(); ++t) {
    if (data.tracks[t].key.kind != TrackKind::iterations) continue;
    for (const DrawSpan& s : data.spans(t, 0, view_)) {
      const double x0 = label_width + s.x0;
      if (s.count == 1 && step_number(data.name(s.name)) % 2)
        p.fillRect(QRectF(x0, top, s.x1 - s.x0, bottom - top), QColor(225, 232, 245, 110));
      p.setPen(QColor(150, 160, 190));
      p.drawLine(QPointF(x0, top), QPointF(x0, bottom));
    }
  }
}

void TimelineWidget::paint_rows(QPainter& p) {
  const TimelineData& data = *timeline_;
  const int area = time_area_width();
  const int page = height() - header_height;
  const auto [first, last] = layout_.rows_between(scroll_y_, scroll_y_ + page);
  for (size_t k = first; k < last; ++k) {
    const RowSlot& r = layout_.rows()[k];
    const int y = header_height + r.top - scroll_y_;
    p.setClipRect(QRect(label_width, std::max(y, header_height), area, row_height));
    for (const DrawSpan& s : data.spans(r.track, r.depth, view_)) {
      const QRectF rect(label_width + s.x0, y + 1, s.x1 - s.x0, row_height - 2);
      QColor c = event_color(s.kind, data.name(s.name));
      if (searching_ && !matches_name(s.name)) c = QColor::fromHsvF(c.hsvHueF(), 0.08, 0.93);
      p.fillRect(rect, c);
      if (rect.width() > 30) {
        // A merged run mixes events: it says how many, not the name of one of them.
        const QString text = s.count == 1 ? QString::fromStdString(data.name(s.name))
                                          : QString("%1 events").arg(s.count);
        p.setPen(searching_ && !matches_name(s.name) ? QColor(150, 150, 150) : Qt::black);
        p.drawText(rect.adjusted(2, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                   p.fontMetrics().elidedText(text, Qt::ElideRight, int(rect.width()) - 4));
      }
    }
    // The label column: the track's name on its first row.
    p.setClipRect(QRect(0, header_height, label_width, page));
    p.fillRect(QRect(0, y, label_width, row_height),
               r.track % 2 ? QColor(232, 232, 238) : QColor(240, 240, 244));
    if (r.depth == 0) {
      p.setPen(QColor(40, 40, 40));
      p.drawText(QRect(4, y, label_width - 8, row_height), Qt::AlignVCenter | Qt::AlignLeft,
                 p.fontMetrics().elidedText(QString::fromStdString(data.tracks[r.track].label),
                                            Qt::ElideLeft, label_width - 8));
    }
  }
  p.setClipping(false);
}

std::optional<QRectF> TimelineWidget::event_rect(size_t track, int64_t event) const {
  const TimelineData& data = *timeline_;
  if (!data.has_events || track >= data.events.size() || event < 0 ||
      size_t(event) >= data.events[track].size())
    return std::nullopt;
  const auto& e = data.events[track];
  const auto i = size_t(event);
  const int y = row_top(track, e.depth[i]);
  if (y < 0) return std::nullopt;
  const double x0 = x_of(e.start[i]);
  return QRectF(x0, y + 1, std::max(2.0, x_of(e.end[i]) - x0), row_height - 2);
}

void TimelineWidget::paint_loading(QPainter& p) {
  // A first part: hatch where events are still being read, and say from when.
  if (timeline_->loaded_until == INT64_MAX) return;
  const double right = label_width + time_area_width();
  const double x0 = std::max<double>(label_width, x_of(timeline_->loaded_until));
  if (x0 >= right) return;
  const QRectF area(x0, header_height, right - x0, height() - header_height);
  p.fillRect(area, QBrush(QColor(120, 120, 130, 110), Qt::BDiagPattern));
  p.setPen(QColor(70, 70, 80));
  p.drawText(area.adjusted(6, 4, -6, 0), Qt::AlignTop | Qt::AlignLeft,
             "loading events after " +
                 duration_text(timeline_->loaded_until - timeline_->span.begin) + "…");
}

void TimelineWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(250, 250, 250));
  if (!timeline_) {
    p.setPen(Qt::gray);
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, placeholder_);
    return;
  }
  QFont small = font();
  small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
  p.setFont(small);
  const int area = time_area_width();
  // Track backgrounds, alternating per track.
  const auto [first, last] = layout_.rows_between(scroll_y_, scroll_y_ + height() - header_height);
  for (size_t k = first; k < last; ++k) {
    const RowSlot& r = layout_.rows()[k];
    if (r.track % 2)
      p.fillRect(QRect(label_width, header_height + r.top - scroll_y_, area, row_height),
                 QColor(243, 243, 246));
  }
  p.setClipRect(QRect(label_width, header_height, area, height() - header_height));
  paint_step_bands(p, header_height, height());
  p.setClipping(false);
  paint_rows(p);
  paint_loading(p);
  paint_overview(p);
  paint_ruler(p);
  p.setClipRect(QRect(label_width, overview_height, area, height() - overview_height));
  // Finding windows, then the selected range.
  for (const TimeRange& w : highlights_) {
    const double x0 = x_of(w.begin), x1 = std::max(x_of(w.end), x0 + 2);
    p.fillRect(QRectF(x0, header_height, x1 - x0, height()), QColor(255, 140, 0, 38));
    p.setPen(QColor(230, 110, 0));
    p.drawLine(QPointF(x0, header_height), QPointF(x0, height()));
  }
  if (selection_) {
    const double x0 = x_of(selection_->begin), x1 = x_of(selection_->end);
    p.fillRect(QRectF(x0, overview_height, x1 - x0, height()), QColor(60, 120, 220, 45));
    p.setPen(QColor(60, 120, 220));
    p.drawText(QRectF(x0 + 2, overview_height, std::max(60.0, x1 - x0), ruler_height),
               Qt::AlignBottom, duration_text(selection_->length()));
  }
  p.setClipRect(QRect(label_width, header_height, area, height() - header_height));
  for (const EventRef& m : marked_)
    if (auto r = event_rect(m.track, m.event)) {
      p.setPen(QPen(QColor(230, 110, 0), 2));
      p.drawRect(*r);
    }
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
  emit painted(timeline_->has_events);
}

void TimelineWidget::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (event->modifiers() & Qt::ShiftModifier) {
    set_scroll(scroll_y_ - int(std::round(steps * 3 * row_height)));
  } else {
    view_.zoom(std::pow(1.25, steps), event->position().x() - label_width);
    changed();
  }
  event->accept();
}

void TimelineWidget::move_overview_to(double x) {
  if (!timeline_) return;
  const TimeView full(timeline_->span, time_area_width());
  const int64_t centre = full.to_time(x - label_width);
  const int64_t len = view_.visible().length();
  view_.show({centre - len / 2, centre - len / 2 + len});
  changed();
}

void TimelineWidget::mousePressEvent(QMouseEvent* event) {
  setFocus();
  view_.begin_gesture();
  drag_x_ = event->position().x();
  dragged_ = false;
  if (event->position().y() < overview_height && drag_x_ >= label_width &&
      event->button() == Qt::LeftButton) {
    drag_ = Drag::overview;
    move_overview_to(drag_x_);
    return;
  }
  const bool select =
      event->button() == Qt::RightButton ||
      (event->button() == Qt::LeftButton && (event->modifiers() & Qt::ShiftModifier));
  drag_ = select ? Drag::select : event->button() == Qt::LeftButton ? Drag::pan : Drag::none;
  drag_anchor_ns_ = view_.to_time(drag_x_ - label_width);
}

void TimelineWidget::mouseMoveEvent(QMouseEvent* event) {
  const double x = event->position().x();
  if (drag_ == Drag::none) {
    // Hover: the event under the cursor becomes the widget's tooltip (the database details are
    // added when the tooltip shows, event()).
    setToolTip(tooltip_at(event->position().toPoint()));
    return;
  }
  if (std::abs(x - drag_x_) > 2) dragged_ = true;
  if (drag_ == Drag::overview) {
    move_overview_to(x);
  } else if (drag_ == Drag::pan && dragged_) {
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
  } else if (drag_ != Drag::overview && !dragged_ && event->button() == Qt::LeftButton &&
             timeline_) {
    const auto row = row_at(int(event->position().y()));
    if (row && event->position().x() >= label_width) {
      const int64_t ns = view_.to_time(event->position().x() - label_width);
      const int64_t slack = int64_t(2 * view_.ns_per_pixel());
      const int64_t e = timeline_->event_at(row->track, row->depth, ns, slack);
      if (e >= 0) select_event(row->track, e);
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
    case Qt::Key_Z:
      zoom_to_selection();
      return;
    case Qt::Key_Up:
      set_scroll(scroll_y_ - row_height);
      return;
    case Qt::Key_Down:
      set_scroll(scroll_y_ + row_height);
      return;
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
