// fleetscoped as a whole: DaemonCore plus its sockets (Thrift API, agent link, Prometheus), the
// sampling thread, and the signals: SIGTERM/SIGINT flush everything and end with 0, SIGHUP
// re-reads the config file. main() only calls run_daemon().
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace fleetscope::daemon {

int run_daemon(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace fleetscope::daemon
