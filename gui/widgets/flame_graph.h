// A flame graph of the CPU ops in the timeline's visible range (timeline/call_tree.h): top-down
// (callers below their callees' row above, flame style: the root at the bottom) or bottom-up
// (icicle: the ops with the most self time on top, their callers below). Widths are shares of the
// range's CPU-op time; hover shows name, total, self and count.
#pragma once

#include <QWidget>
#include <optional>

#include "fleetscope/timeline/call_tree.h"
#include "loader.h"

namespace fleetscope::gui {

class FlameGraphWidget : public QWidget {
  Q_OBJECT
 public:
  explicit FlameGraphWidget(QWidget* parent = nullptr);
  // Recomputes the tree of `range` (raw events needed; otherwise shows why it is empty).
  void set_range(TimelinePtr timeline, TimeRange range);
  void set_order(timeline::CallTreeOrder order);
  timeline::CallTreeOrder order() const { return order_; }
  const timeline::CallNode& tree() const { return tree_; }
  static constexpr int row_height = 18;
  // The node drawn at a point, and the text of its tooltip ("" when none).
  QString tooltip_at(QPoint pos) const;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;

 private:
  struct Box {
    QRectF rect;
    const timeline::CallNode* node;
  };
  void layout_boxes();
  void recompute();
  TimelinePtr timeline_;
  TimeRange range_{0, 1};
  timeline::CallTreeOrder order_ = timeline::CallTreeOrder::top_down;
  timeline::CallNode tree_;
  std::vector<Box> boxes_;
};

}  // namespace fleetscope::gui
