// A subcommand of the `fleetscope` CLI. Each part of fleetscope implements its commands in its own
// library as a function of this shape; the CLI only dispatches. Exit codes: 0 ok, 1 failure,
// 2 usage error. Results go to `out`, progress and diagnostics to `err`.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace fleetscope::cli {

using CommandFn =
    std::function<int(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)>;

struct Command {
  std::string name;     // e.g. "import", or "share plan"
  std::string summary;  // one line for `fleetscope --help`
  CommandFn run;
};

// Every registered command, in the order `fleetscope --help` lists them.
const std::vector<Command>& commands();

// Full CLI entry: argv without the program name. Returns the exit code.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace fleetscope::cli
