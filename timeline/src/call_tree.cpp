#include "fleetscope/timeline/call_tree.h"

#include <algorithm>

namespace fleetscope::timeline {

CallNode* CallNode::child(int32_t child_name) {
  for (auto& c : children)
    if (c.name == child_name) return &c;
  children.push_back({child_name, 0, 0, 0, {}});
  return &children.back();
}

namespace {

void sort_children(CallNode& node) {
  // Ops entirely outside the range (walked only to know the nesting) leave empty nodes.
  node.children.erase(std::remove_if(node.children.begin(), node.children.end(),
                                     [](const CallNode& c) { return c.total_ns <= 0; }),
                      node.children.end());
  std::sort(node.children.begin(), node.children.end(), [](const CallNode& a, const CallNode& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  for (auto& c : node.children) sort_children(c);
}

}  // namespace

CallNode call_tree(const TimelineData& data, TimeRange range, CallTreeOrder order) {
  CallNode root;
  if (!data.has_events) return root;
  for (size_t t = 0; t < data.tracks.size() && t < data.events.size(); ++t) {
    if (data.tracks[t].key.kind != TrackKind::thread_cpu) continue;
    const TrackEvents& e = data.events[t];
    // Per event overlapping the range: its clipped time, and its self time once its children
    // (the next events one row deeper while it is open) are subtracted.
    struct Open {
      size_t event;
      int64_t clipped;
      int64_t children = 0;
    };
    std::vector<Open> stack;
    std::vector<size_t> path;  // event indices, outermost first (for bottom-up)
    // Closes the innermost open op (stack.back()).
    auto close = [&] {
      const Open& o = stack.back();
      const int64_t self = std::max<int64_t>(0, o.clipped - o.children);
      if (order == CallTreeOrder::top_down) return;
      // Bottom-up: the op's self time under the chain of ops it ran inside, innermost first.
      path.clear();
      for (const Open& s : stack) path.push_back(s.event);
      CallNode* node = &root;
      root.total_ns += self;
      for (auto it = path.rbegin(); it != path.rend(); ++it) {
        node = node->child(e.name[*it]);
        node->total_ns += self;
        if (it == path.rbegin()) node->self_ns += self, ++node->count;
      }
    };
    std::vector<CallNode*> nodes;  // top-down: the node of each open event
    const size_t first = TimelineData::first_overlapping(e.start, range.begin, e.max_duration);
    // Start at the outermost event open at `first` so depths line up: walk from the row-0 event.
    size_t i = first;
    while (i > 0 && e.depth[i] > 0) --i;
    for (; i < e.size() && e.start[i] < range.end; ++i) {
      const int64_t clipped =
          std::max<int64_t>(0, std::min(e.end[i], range.end) - std::max(e.start[i], range.begin));
      const size_t depth = e.depth[i];
      while (stack.size() > depth) {
        close();
        stack.pop_back();
        if (!nodes.empty()) nodes.pop_back();
      }
      if (!stack.empty()) stack.back().children += clipped;
      if (order == CallTreeOrder::top_down) {
        CallNode* parent = nodes.empty() ? &root : nodes.back();
        CallNode* node = parent->child(e.name[i]);
        node->total_ns += clipped;
        node->self_ns += clipped;
        if (clipped > 0) ++node->count;
        if (parent != &root) parent->self_ns -= clipped;
        if (parent == &root) root.total_ns += clipped;
        nodes.push_back(node);
      }
      stack.push_back({i, clipped, 0});
    }
    while (!stack.empty()) {
      close();
      stack.pop_back();
    }
  }
  sort_children(root);
  return root;
}

}  // namespace fleetscope::timeline
