// `fleetscope import FILE... -o OUT.db [--force]`.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace fleetscope::importers {

// Exit codes: 0 ok, 1 bad input or I/O failure (no output left), 2 usage error.
int run_import_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace fleetscope::importers
