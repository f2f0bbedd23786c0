// Wires the parts' hooks together (e.g. the sharer's candidate loader to the analyzer). Called
// once by run_cli before dispatching; idempotent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/sharer/commands.h"
#include "fleetscope/sharer/gpu_advice.h"

namespace fleetscope::cli {

void wire_integrations();

// The analysis session's consolidation candidates of trace databases as the planner's job
// profiles under `memory`, and the candidates it cannot place (the loader `share plan DB...` and
// `share apply --auto` use).
sharer::CandidateSet candidates_from_databases(const std::vector<std::string>& paths,
                                               const sharer::MemoryModel& memory);

// One capture's GPU activities, GPU names and steps as the GPU-type advisor's input (`fleetscope
// advise DB`); the newest capture when none is named.
sharer::CapturedWork captured_work_from_database(const std::string& db_path,
                                                 std::optional<int64_t> capture);

}  // namespace fleetscope::cli
