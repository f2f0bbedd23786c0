// Commands that only need the store: info, sql, migrate.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace fleetscope::cli {

int run_info_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_sql_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_migrate_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace fleetscope::cli
