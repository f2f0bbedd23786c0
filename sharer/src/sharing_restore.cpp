#include "fleetscope/sharer/sharing_restore.h"

#include <map>
#include <nlohmann/json.hpp>

namespace fleetscope::sharer {

using json = nlohmann::json;

const std::vector<std::string>& sharing_state_event_kinds() {
  static const std::vector<std::string> kinds{"plan_applied",   "plan_restored", "plan_superseded",
                                              "plan_withdrawn", "sharing_off",   "automatic_on",
                                              "automatic_off",  "sharing_on"};
  return kinds;
}

SharingResumeState replay_sharing_records(const std::vector<SharingRecord>& records) {
  SharingResumeState state;
  std::map<int64_t, std::vector<std::string>> workflows_of;  // plan id -> its workflows
  int64_t switched_off = -1;  // the plan a sharing_off stopped (-1: none)
  for (const auto& record : records) {
    json detail = json::parse(record.detail_json, nullptr, /*allow_exceptions=*/false);
    if (!detail.is_object()) detail = json::object();
    auto number = [&](const char* key, double fallback) {
      auto it = detail.find(key);
      return it != detail.end() && it->is_number() ? it->get<double>() : fallback;
    };
    const bool of_active = record.plan_id && state.active_plan_id == record.plan_id;
    if (record.kind == "plan_applied" || record.kind == "plan_restored") {
      if (!record.plan_id) continue;
      std::vector<std::string> workflows;
      if (auto it = detail.find("workflows"); it != detail.end() && it->is_array())
        for (const auto& w : *it)
          if (w.is_string()) workflows.push_back(w.get<std::string>());
      for (const auto& w : workflows) state.withdrawn_workflows.erase(w);
      workflows_of[*record.plan_id] = std::move(workflows);
      state.active_plan_id = record.plan_id;
      state.enabled = true;
      // As SharingService::apply_plan: the plan's own mode; its bound only when automatic.
      state.automatic = detail.value("automatic", false);
      if (state.automatic) state.max_slowdown = number("max_slowdown", state.max_slowdown);
    } else if (record.kind == "plan_superseded") {
      if (of_active) state.active_plan_id.reset();
    } else if (record.kind == "plan_withdrawn") {
      if (of_active) state.active_plan_id.reset();
      if (record.plan_id)
        for (const auto& w : workflows_of[*record.plan_id]) state.withdrawn_workflows.insert(w);
    } else if (record.kind == "sharing_off") {
      switched_off = state.active_plan_id.value_or(-1);
      state.active_plan_id.reset();
      state.enabled = false;
      state.automatic = false;
    } else if (record.kind == "sharing_on") {
      // As SharingService::on: the plan sharing_off stopped applies again.
      state.enabled = true;
      if (record.plan_id && *record.plan_id == switched_off) state.active_plan_id = record.plan_id;
      switched_off = -1;
    } else if (record.kind == "automatic_on") {
      state.automatic = true;
      state.enabled = true;
      state.max_slowdown = number("max_slowdown", state.max_slowdown);
    } else if (record.kind == "automatic_off") {
      state.automatic = false;
    }
  }
  return state;
}

ServicePlan resumed_plan(int64_t id, int64_t created_ns, const std::string& policy,
                         const std::string& plan_json, const SharingResumeState& state,
                         const std::string& source) {
  ServicePlan plan;
  plan.id = id;
  plan.created_ns = created_ns;
  plan.policy = policy;
  plan.automatic = state.automatic;
  plan.max_slowdown = state.max_slowdown;
  plan.placements = parse_plan_placements(plan_json, source);
  return plan;
}

}  // namespace fleetscope::sharer
