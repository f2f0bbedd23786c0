#include "tree_model.h"

#include <functional>
#include <map>
#include <tuple>

#include "fleetscope/analyzer/report_document.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::gui {

TreeNode* TreeNode::add(QStringList cols, int64_t p) {
  auto child = std::make_unique<TreeNode>();
  child->columns = std::move(cols);
  child->payload = p;
  child->parent = this;
  children.push_back(std::move(child));
  return children.back().get();
}

int TreeNode::row() const {
  if (!parent) return 0;
  for (size_t i = 0; i < parent->children.size(); ++i)
    if (parent->children[i].get() == this) return int(i);
  return 0;
}

TreeModel::TreeModel(QStringList headers, QObject* parent)
    : QAbstractItemModel(parent),
      headers_(std::move(headers)),
      root_(std::make_unique<TreeNode>()) {}

void TreeModel::set_root(std::unique_ptr<TreeNode> root) {
  beginResetModel();
  root_ = std::move(root);
  endResetModel();
}

const TreeNode* TreeModel::node(const QModelIndex& index) const {
  return index.isValid() ? static_cast<const TreeNode*>(index.internalPointer()) : root_.get();
}

QModelIndex TreeModel::index(int row, int column, const QModelIndex& parent) const {
  if (!hasIndex(row, column, parent)) return {};
  const TreeNode* p = node(parent);
  return createIndex(row, column, p->children[size_t(row)].get());
}

QModelIndex TreeModel::parent(const QModelIndex& child) const {
  if (!child.isValid()) return {};
  const TreeNode* p = node(child)->parent;
  if (!p || p == root_.get()) return {};
  return createIndex(p->row(), 0, const_cast<TreeNode*>(p));
}

int TreeModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() && parent.column() != 0) return 0;
  return int(node(parent)->children.size());
}

int TreeModel::columnCount(const QModelIndex&) const {
  return int(headers_.size());
}

QVariant TreeModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  const TreeNode* n = node(index);
  return index.column() < n->columns.size() ? n->columns[index.column()] : QString();
}

QVariant TreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role == Qt::DisplayRole && orientation == Qt::Horizontal && section >= 0 &&
      section < headers_.size())
    return headers_[section];
  return {};
}

TrackModel::TrackModel(QObject* parent) : TreeModel({"Track", "Events"}, parent) {}

void TrackModel::set_tracks(const std::vector<Track>& tracks,
                            const std::vector<TrackEvents>& events) {
  auto root = std::make_unique<TreeNode>();
  std::map<int64_t, TreeNode*> hosts;
  std::map<std::pair<int64_t, int64_t>, TreeNode*> processes;
  std::map<std::tuple<int64_t, int64_t, int, int64_t>, TreeNode*> groups;
  for (size_t t = 0; t < tracks.size(); ++t) {
    const Track& track = tracks[t];
    TreeNode*& host = hosts[track.host_id];
    if (!host)
      host = root->add(
          {track.host.empty() ? QString("host (unknown)") : QString::fromStdString(track.host),
           ""});
    const int64_t pid = track.key.global_pid < 0 ? -1 : store::pid_of(track.key.global_pid);
    TreeNode*& process = processes[{track.host_id, pid}];
    if (!process)
      process = host->add(
          {pid < 0 ? QString("process (unknown)") : "process " + QString::number(pid), ""});
    TreeNode* parent = process;
    const bool gpu = track.key.kind == TrackKind::gpu_stream;
    if (track.key.kind != TrackKind::iterations) {
      const int64_t id = gpu ? track.key.device : store::tid_of(track.key.global_tid);
      TreeNode*& group = groups[{track.host_id, pid, gpu ? 0 : 1, id}];
      if (!group) group = process->add({(gpu ? "GPU " : "thread ") + QString::number(id), ""});
      parent = group;
    }
    QString leaf =
        gpu ? "stream " + QString::number(track.key.stream) : QString(to_string(track.key.kind));
    parent->add({leaf, t < events.size() ? QString::number(events[t].size()) : QString()},
                int64_t(t));
  }
  set_root(std::move(root));
}

QModelIndex TrackModel::index_of_track(size_t track) const {
  std::function<QModelIndex(const QModelIndex&)> find =
      [&](const QModelIndex& parent) -> QModelIndex {
    for (int r = 0; r < rowCount(parent); ++r) {
      QModelIndex i = index(r, 0, parent);
      if (node(i)->payload == int64_t(track) && node(i)->children.empty()) return i;
      if (QModelIndex found = find(i); found.isValid()) return found;
    }
    return {};
  };
  return find({});
}

SharingModel::SharingModel(QObject* parent)
    : TreeModel({"GPU / lane / job", "Capacity", "P (persistent)", "T (ephemeral peak)",
                 "Predicted slowdown"},
                parent) {}

void SharingModel::set_plan(const sharer::ConsolidationPlan& plan,
                            const std::vector<sharer::JobProfile>& jobs) {
  auto root = std::make_unique<TreeNode>();
  std::map<std::string, const sharer::JobProfile*> profile;
  for (const auto& j : jobs) profile[j.job_id] = &j;
  std::map<std::string, const sharer::PlannedJob*> planned;
  for (const auto& j : plan.jobs) planned[j.job_id] = &j;
  auto bytes = [](int64_t b) { return QString::fromStdString(analyzer::format_bytes(b)); };
  for (const auto& gpu : plan.gpus) {
    TreeNode* g = root->add({QString::fromStdString(gpu.gpu), bytes(gpu.capacity_bytes), "", "",
                             "free " + bytes(gpu.free_bytes)});
    for (const auto& lane : gpu.lanes) {
      TreeNode* l = g->add({"lane " + QString::number(lane.lane_id) + (lane.solo ? " (solo)" : ""),
                            bytes(lane.capacity_bytes), "", "", ""});
      for (const auto& id : lane.job_ids) {
        const auto* p = profile.count(id) ? profile[id] : nullptr;
        const auto* pj = planned.count(id) ? planned[id] : nullptr;
        l->add({QString::fromStdString(id), "", p ? bytes(p->persistent_bytes) : "",
                p ? bytes(p->ephemeral_peak_bytes) : "",
                pj ? QString::number(pj->predicted_slowdown, 'f', 2) + "×" : ""});
      }
    }
  }
  for (const auto& freed : plan.gpus_freed)
    root->add({QString::fromStdString(freed), "", "", "", "freed"});
  set_root(std::move(root));
}

}  // namespace fleetscope::gui
