#pragma once
// The planner's settings on this host, what every plan starts from: `share plan`, `share apply
// --auto`, the GUI and the daemon (through the analysis session, analyzer/session.h). Flags then
// change single fields. One place, so that the same database gives the same plan everywhere.

#include <string>

#include "fleetscope/sharer/interference.h"
#include "fleetscope/sharer/planner.h"

namespace fleetscope::sharer {

struct HostPlanning {
  // Bound 1.2, the host's memory model (memory_model.h: the CUDA context from the host config),
  // the interference model below.
  PlannerOptions options;
  InterferenceCalibration interference;  // the published default (Gavel's V100 pairs)
  std::string context_source;            // where the context figure came from
};

// `config_path`: the host config (empty: $FLEETSCOPE_CONFIG, else /etc/fleetscope/
// fleetscoped.conf). Throws std::runtime_error naming the file and line for a bad value.
HostPlanning host_planning(const std::string& config_path = {});

}  // namespace fleetscope::sharer
