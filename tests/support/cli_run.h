// Runs the `fleetscope` command in-process (cli::run_cli) and keeps its exit code, stdout and
// stderr, for tests that check what a user sees.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "fleetscope/cli/command.h"

namespace fleetscope::test_support {

struct CliRun {
  int code;
  std::string out, err;
};

inline CliRun run_cli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  int code = cli::run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace fleetscope::test_support
