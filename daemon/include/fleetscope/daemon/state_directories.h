// The folders fleetscoped writes to: the database's and the sockets'. Under systemd the unit
// creates them (StateDirectory=, RuntimeDirectory=); run by hand, the daemon creates them itself,
// or says which one it could not create and why.
#pragma once

#include "fleetscope/daemon/config.h"

namespace fleetscope::daemon {

// Creates the parent folder of the database, the API socket, the agent socket and the gate socket
// when missing. Throws std::runtime_error "cannot create directory DIR (for the database PATH):
// REASON" for the first one it cannot create.
void prepare_state_directories(const DaemonConfig& config);

}  // namespace fleetscope::daemon
