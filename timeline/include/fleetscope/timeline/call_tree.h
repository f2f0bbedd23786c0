// The CPU ops of a time range as a call tree, from the timeline's nesting (an op's parent is the
// op it started inside, TimelineData rows), as hotspot and the PyTorch profiler show them:
//
//   top-down   root → outermost ops → the ops they called …; a node's total is the time of its
//              ops (clipped to the range), its self time the part not covered by its callees.
//   bottom-up  root → every op name by self time → the callers it ran under …; each node holds
//              the self time of the innermost op spent under that chain of callers.
//
// Nodes of the same name under the same parent are merged. Pure (no Qt); the flame graph and
// the call-tree views draw it.
#pragma once

#include <cstdint>
#include <vector>

#include "fleetscope/timeline/timeline_data.h"

namespace fleetscope::timeline {

struct CallNode {
  int32_t name = -1;  // TimelineData::names index; -1 for the root
  int64_t total_ns = 0, self_ns = 0, count = 0;
  std::vector<CallNode> children;  // by total time, largest first
  CallNode* child(int32_t child_name);
};

enum class CallTreeOrder { top_down, bottom_up };

// Over the CPU-op tracks of `data` (raw events needed), events overlapping `range`.
CallNode call_tree(const TimelineData& data, TimeRange range, CallTreeOrder order);

}  // namespace fleetscope::timeline
