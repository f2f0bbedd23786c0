// `fleetscope export DB -o FILE [--format chrome] [--capture ID]`.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace fleetscope::exporter {

int run_export_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace fleetscope::exporter
