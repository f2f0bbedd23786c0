// What a restarted daemon takes back from its own records: the plan that was active when it
// stopped, whether sharing was switched off, automatic mode with its bound, and the workflows of
// withdrawn plans (they stay unshared). Replays the sharing_events rows that changed that state,
// so nothing but lane_plans and sharing_events needs to be stored. No I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fleetscope/sharer/sharing_service.h"

namespace fleetscope::sharer {

struct SharingResumeState {
  std::optional<int64_t> active_plan_id;
  bool enabled = true;
  bool automatic = false;
  double max_slowdown = 0;
  std::set<std::string> withdrawn_workflows;
};

// The sharing_events kinds the replay reads (the others do not change the state).
const std::vector<std::string>& sharing_state_event_kinds();

// Replays `records` (oldest first): plan_applied / plan_restored make a plan active,
// plan_superseded / plan_withdrawn / sharing_off end it, automatic_on / automatic_off switch
// automatic mode. Records with a detail that is not JSON change only what their kind implies.
SharingResumeState replay_sharing_records(const std::vector<SharingRecord>& records);

// The lane_plans row of the active plan as the service holds it again. Throws std::runtime_error
// naming `source` when the stored plan is not a plan document.
ServicePlan resumed_plan(int64_t id, int64_t created_ns, const std::string& policy,
                         const std::string& plan_json, const SharingResumeState& state,
                         const std::string& source);

}  // namespace fleetscope::sharer
