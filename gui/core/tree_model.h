// A read-only tree model over plain nodes, and the two trees the GUI shows: the timeline's
// tracks (host > process > GPU / thread > track) and the sharing plan (GPU > lane > job).
#pragma once

#include <QAbstractItemModel>
#include <QStringList>
#include <memory>
#include <vector>

#include "fleetscope/sharer/planner.h"
#include "timeline_data.h"

namespace fleetscope::gui {

struct TreeNode {
  QStringList columns;
  int64_t payload = -1;  // track index for track leaves
  TreeNode* parent = nullptr;
  std::vector<std::unique_ptr<TreeNode>> children;
  TreeNode* add(QStringList cols, int64_t payload = -1);
  int row() const;
};

class TreeModel : public QAbstractItemModel {
 public:
  explicit TreeModel(QStringList headers, QObject* parent = nullptr);
  void set_root(std::unique_ptr<TreeNode> root);
  const TreeNode* node(const QModelIndex& index) const;

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  QStringList headers_;
  std::unique_ptr<TreeNode> root_;
};

// Host > process > (iterations | GPU d > stream s | thread t > CUDA API / NVTX / CPU ops).
// Leaves carry the track index (TreeNode::payload); every leaf appears once, in track order.
class TrackModel : public TreeModel {
 public:
  explicit TrackModel(QObject* parent = nullptr);
  // `events`: per track, for the event counts (may be empty before the raw events are loaded).
  void set_tracks(const std::vector<Track>& tracks, const std::vector<TrackEvents>& events);
  // Track index → its leaf.
  QModelIndex index_of_track(size_t track) const;
};

// GPU > lane > job of a plan, with capacities, P and T, and predicted slowdowns; freed GPUs last.
class SharingModel : public TreeModel {
 public:
  explicit SharingModel(QObject* parent = nullptr);
  void set_plan(const sharer::ConsolidationPlan& plan, const std::vector<sharer::JobProfile>& jobs);
};

}  // namespace fleetscope::gui
