// fleetscoped: the host daemon. Everything lives in the daemon library (daemon.h).
#include <iostream>

#include "fleetscope/daemon/daemon.h"

int main(int argc, char** argv) {
  return fleetscope::daemon::run_daemon(std::vector<std::string>(argv + 1, argv + argc), std::cout,
                                        std::cerr);
}
