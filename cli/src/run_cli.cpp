#include <algorithm>

#include "fleetscope/cli/command.h"
#include "fleetscope/cli/integrations.h"

namespace fleetscope::cli {
namespace {

void print_usage(std::ostream& out) {
  out << "usage: fleetscope [--version] [--help] COMMAND [ARGS...]\n\n"
         "fleetscope records what GPU jobs do, finds where GPU time is wasted, and consolidates\n"
         "jobs that leave GPUs idle. Every command takes --help.\n\ncommands:\n";
  for (const Command& c : commands()) {
    std::string name = c.name;
    out << "  " << name << std::string(name.size() < 14 ? 14 - name.size() : 2, ' ') << c.summary
        << "\n";
  }
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  wire_integrations();
  if (args.empty()) {
    print_usage(err);
    return 2;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_usage(out);
    return 0;
  }
  if (args[0] == "--version") {
    out << "fleetscope " << FLEETSCOPE_VERSION_STRING << "\n";
    return 0;
  }
  // Two-word commands ("share plan") take precedence over one-word ones.
  for (const Command& c : commands()) {
    if (c.name.find(' ') == std::string::npos) continue;
    std::string first = c.name.substr(0, c.name.find(' '));
    std::string second = c.name.substr(c.name.find(' ') + 1);
    if (args.size() >= 2 && args[0] == first && args[1] == second)
      return c.run(std::vector<std::string>(args.begin() + 2, args.end()), out, err);
  }
  for (const Command& c : commands()) {
    if (c.name == args[0])
      return c.run(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
  }
  // A group name alone ("share") lists its subcommands.
  bool group = false;
  for (const Command& c : commands()) {
    if (c.name.rfind(args[0] + " ", 0) == 0) {
      // `share bogus` printed the list without saying what was wrong.
      if (!group && args.size() >= 2)
        err << "error: unknown " << args[0] << " subcommand '" << args[1] << "'\n";
      if (!group) err << "usage: fleetscope " << args[0] << " SUBCOMMAND\n";
      group = true;
      err << "  " << c.name << "  " << c.summary << "\n";
    }
  }
  if (group) return 2;
  err << "error: unknown command '" << args[0] << "'\n";
  print_usage(err);
  return 2;
}

}  // namespace fleetscope::cli
