// `fleetscope run [--delay-ms N] [--duration-ms N | --iterations N] [-o OUT.db] -- CMD ARGS...`
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace fleetscope::launcher {

// Prints a summary of a finished database (the CLI passes its `info` command; the launcher cannot
// link the CLI, which links the launcher).
using InfoPrinter =
    std::function<int(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)>;

// Runs CMD with the agent injected and returns CMD's exit code (128 + signal when it was killed),
// 1 when the launcher itself failed, 2 on a usage error.
int run_run_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                    const InfoPrinter& print_info = {});

}  // namespace fleetscope::launcher
