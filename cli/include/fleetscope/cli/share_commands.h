// The sharing service from the command line: `fleetscope share status|apply|off|auto` and
// `fleetscope run --share -- CMD` (a lane from the daemon, then CMD with the interposition
// library and the lane's environment).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "fleetscope/launcher/run_command.h"

namespace fleetscope::cli {

int run_share_status_command(const std::vector<std::string>& args, std::ostream& out,
                             std::ostream& err);
int run_share_apply_command(const std::vector<std::string>& args, std::ostream& out,
                            std::ostream& err);
int run_share_off_command(const std::vector<std::string>& args, std::ostream& out,
                          std::ostream& err);
int run_share_auto_command(const std::vector<std::string>& args, std::ostream& out,
                           std::ostream& err);
int run_share_on_command(const std::vector<std::string>& args, std::ostream& out,
                         std::ostream& err);
int run_share_ledgers_command(const std::vector<std::string>& args, std::ostream& out,
                              std::ostream& err);

// `fleetscope run --share ...`: true when the arguments (before `--`) ask for a lane.
bool wants_share(const std::vector<std::string>& args);
int run_shared_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                       const launcher::InfoPrinter& print_info);

// FLEETSCOPE_LANES_LIBRARY, else libfleetscope_lanes.so beside the program, in ../lib or in
// ../lib/fleetscope (the build tree and an installed tree).
std::optional<std::string> find_lanes_library(std::string& searched);

}  // namespace fleetscope::cli
