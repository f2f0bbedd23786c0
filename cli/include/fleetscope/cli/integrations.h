// Wires the parts' hooks together (e.g. the sharer's candidate loader to the analyzer). Called
// once by run_cli before dispatching; idempotent.
#pragma once

#include <string>
#include <vector>

#include "fleetscope/sharer/job_profile.h"

namespace fleetscope::cli {

void wire_integrations();

// The analyzer's consolidation candidates of one trace database as the planner's job profiles
// (the loader `share plan DB...` uses).
std::vector<sharer::JobProfile> job_profiles_from_database(const std::string& db_path);

}  // namespace fleetscope::cli
