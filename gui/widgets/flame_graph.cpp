#include "flame_graph.h"

#include <QMouseEvent>
#include <QPainter>
#include <functional>

#include "colors.h"
#include "fleetscope/timeline/ruler.h"

namespace fleetscope::gui {

FlameGraphWidget::FlameGraphWidget(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumHeight(60);
}

void FlameGraphWidget::set_range(TimelinePtr timeline, TimeRange range) {
  timeline_ = std::move(timeline);
  range_ = range;
  recompute();
}

void FlameGraphWidget::set_order(timeline::CallTreeOrder order) {
  order_ = order;
  recompute();
}

void FlameGraphWidget::recompute() {
  tree_ = timeline_ ? timeline::call_tree(*timeline_, range_, order_) : timeline::CallNode{};
  layout_boxes();
  update();
}

void FlameGraphWidget::layout_boxes() {
  boxes_.clear();
  if (tree_.total_ns <= 0) return;
  const double scale = double(width()) / double(tree_.total_ns);
  const bool flame = order_ == timeline::CallTreeOrder::top_down;
  // Depth d's row: from the bottom for a flame graph, from the top for an icicle (bottom-up).
  auto row_y = [&](int depth) {
    return flame ? double(height() - (depth + 1) * row_height) : double(depth * row_height);
  };
  std::function<void(const timeline::CallNode&, double, int)> place =
      [&](const timeline::CallNode& node, double x, int depth) {
        for (const auto& c : node.children) {
          const double w = double(c.total_ns) * scale;
          if (w >= 1.0 && row_y(depth) > -row_height && row_y(depth) < height())
            boxes_.push_back({QRectF(x, row_y(depth), w, row_height - 1), &c});
          if (w >= 1.0) place(c, x, depth + 1);
          x += w;
        }
      };
  place(tree_, 0, 0);
}

QString FlameGraphWidget::tooltip_at(QPoint pos) const {
  for (const Box& b : boxes_)
    if (b.rect.contains(pos)) {
      const auto& n = *b.node;
      return QString("%1\ntotal %2 (%3 % of the range's CPU-op time)\nself %4 · %5 call(s)")
          .arg(QString::fromStdString(timeline_->name(n.name)),
               QString::fromStdString(timeline::format_duration_ns(n.total_ns)))
          .arg(100.0 * double(n.total_ns) / double(std::max<int64_t>(1, tree_.total_ns)), 0, 'f', 1)
          .arg(
              QString::fromStdString(timeline::format_duration_ns(std::max<int64_t>(0, n.self_ns))))
          .arg(n.count);
    }
  return {};
}

void FlameGraphWidget::mouseMoveEvent(QMouseEvent* event) {
  setToolTip(tooltip_at(event->position().toPoint()));
}

void FlameGraphWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(250, 250, 250));
  layout_boxes();  // the size may have changed
  if (boxes_.empty()) {
    p.setPen(Qt::gray);
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
               !timeline_ ? QString("No capture open.")
               : !timeline_->has_events
                   ? QString("The CPU ops are still loading.")
                   : QString("No CPU ops in the visible range (the trace has no cpu_ops, or "
                             "none runs here)."));
    return;
  }
  for (const Box& b : boxes_) {
    const std::string& name = timeline_->name(b.node->name);
    p.fillRect(b.rect, event_color(EventKind::cpu_op, name));
    if (b.rect.width() > 30) {
      p.setPen(Qt::black);
      p.drawText(b.rect.adjusted(2, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                 p.fontMetrics().elidedText(QString::fromStdString(name), Qt::ElideRight,
                                            int(b.rect.width()) - 4));
    }
  }
}

}  // namespace fleetscope::gui
