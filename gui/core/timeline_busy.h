// The kernel utilization chart before a capture is analysed (a large capture waits for the
// Analyze button): per device, the union of the kernels the timeline already holds, handed to
// analyzer::gpu_utilization_timeline, the one definition of that utilization (the analysed chart
// hands it analyzer::kernel_busy, the same union over the analyzer's copy of the events).
#pragma once

#include <cstdint>
#include <map>

#include "fleetscope/analyzer/intervals.h"
#include "timeline_data.h"

namespace fleetscope::gui {

struct TimelineKernelBusy {
  std::map<int32_t, analyzer::IntervalSet> by_device;  // devices with a GPU stream track
  // From the zoom summary (the raw events are not loaded yet): its finest level merges
  // neighbours closer than TimelineData::base_gap_ns and names a merged run by its longest
  // member, so gaps under 1 µs count as busy and a run is a kernel's when its longest member is.
  bool from_summary = false;
};

// Kernels on the GPU stream tracks that overlap `range`: the raw events when they are loaded,
// else the finest zoom level of each stream.
TimelineKernelBusy timeline_kernel_busy(const TimelineData& data, TimeRange range);

}  // namespace fleetscope::gui
