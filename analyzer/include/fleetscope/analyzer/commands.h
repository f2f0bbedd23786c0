// The analyzer's `fleetscope` subcommands. Exit codes: 0 ok, 1 failure, 2 usage error.
//   analyze DB      run the rules on a capture, store and print the findings
//   report DB       the report document (metrics, charts, findings) as HTML or Markdown, or
//                   the findings stored in a database as a table, JSON or Chrome trace
//   fleet DB...     rank jobs across databases by wasted GPU-hours
//   diff A B        compare the metrics of two captures
//   candidates DB   consolidation candidates (utilization, P, T) for the sharer
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace fleetscope::analyzer {

int run_analyze_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_report_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_fleet_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_diff_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_candidates_command(const std::vector<std::string>& args, std::ostream& out,
                           std::ostream& err);

}  // namespace fleetscope::analyzer
