// Wires the parts' hooks together (e.g. the sharer's candidate loader to the analyzer). Called
// once by run_cli before dispatching; idempotent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/sharer/gpu_advice.h"
#include "fleetscope/sharer/job_profile.h"

namespace fleetscope::cli {

void wire_integrations();

// The analyzer's consolidation candidates of one trace database as the planner's job profiles
// (the loader `share plan DB...` uses).
std::vector<sharer::JobProfile> job_profiles_from_database(const std::string& db_path);

// One capture's GPU activities, GPU names and steps as the GPU-type advisor's input (`fleetscope
// advise DB`); the newest capture when none is named.
sharer::CapturedWork captured_work_from_database(const std::string& db_path,
                                                 std::optional<int64_t> capture);

}  // namespace fleetscope::cli
