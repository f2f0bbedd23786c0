// Whether a consolidation plan may be applied on the connected daemon's host: every GPU the plan
// keeps jobs on must be one of that host's devices. Plans name GPUs as the analyzer saw them
// ("host.db#capture1/gpu0 (NVIDIA H100)"); the device index after "/gpu" must be a device the
// daemon reports. (A daemon with no GPU accepts no plan: the GUI once sent it one naming gpu0.)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "daemon_link.h"
#include "fleetscope/sharer/planner.h"

namespace fleetscope::gui {

// The device index a plan's GPU name carries ("…/gpu3 (…)" → 3), if any.
std::optional<int32_t> plan_gpu_index(const std::string& gpu);
// Why the plan cannot go to this host ("" when it can).
std::string plan_host_mismatch(const sharer::ConsolidationPlan& plan, const DaemonStatusView& host);
// What Apply will change, one line per job and GPU, for the confirmation.
std::vector<std::string> plan_changes(const sharer::ConsolidationPlan& plan);

}  // namespace fleetscope::gui
