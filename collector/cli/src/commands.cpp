// The table of `fleetscope` subcommands. Each entry calls into the library that owns the logic.
#include "fleetscope/cli/command.h"
#include "fleetscope/cli/store_commands.h"
#if HAVE_FLEETSCOPE_IMPORTERS
#include "fleetscope/importers/import_command.h"
#endif

namespace fleetscope::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"info", "summarize a trace database (devices, processes, span, counts)", run_info_command},
      {"sql", "run a read-only SQL query on a trace database", run_sql_command},
#if HAVE_FLEETSCOPE_IMPORTERS
      {"import", "import Kineto/PyTorch-profiler JSON or nsys SQLite exports into a trace database", importers::run_import_command},
#endif
      // COMMANDS: one line per command; keep this marker.
  };
  return table;
}

}  // namespace fleetscope::cli
