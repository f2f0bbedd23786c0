#include <exception>
#include <iostream>

#include "fleetscope/cli/command.h"
#include "fleetscope/store/database.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // An interrupted import or export leaves no temporary file behind.
  fleetscope::store::AtomicOutput::remove_temporaries_on_signal();
  // One line on stderr for each file of an older schema read through a migrated copy.
  fleetscope::store::set_migrated_copy_listener([](const fleetscope::store::MigratedCopyNotice& n) {
    if (n.stage == fleetscope::store::MigratedCopyNotice::Stage::reading)
      std::cerr << n.line() << "\n";
  });
  try {
    return fleetscope::cli::run_cli(args, std::cout, std::cerr);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
