// Threshold overrides from a config file, so a team can keep its own defaults next to its jobs
// (`fleetscope analyze --config thresholds.conf`; `--set` on the command line still wins).
//
// Format, one override per line; `#` starts a comment; blank lines are ignored:
//   gpu_idle_gaps.min_gap_ns = 200e6
//   [low_gpu_utilization]          # a section names the rule for the lines below it
//   min_utilization = 0.4
// Every name must be a threshold of a built-in rule (see `fleetscope analyze --list-rules`).
#pragma once

#include <istream>
#include <string>

#include "fleetscope/analyzer/rules.h"

namespace fleetscope::analyzer {

// Throws fleetscope::InputError naming the file, the line and what was expected.
ThresholdOverrides parse_threshold_config(std::istream& in, const std::string& file_name);
ThresholdOverrides read_threshold_config(const std::string& path);

}  // namespace fleetscope::analyzer
