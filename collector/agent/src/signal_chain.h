// The agent's handler for the signals that end jobs (SIGTERM from Slurm, Kubernetes and torchrun,
// SIGINT, SIGABRT from abort() and NCCL's watchdog): it lets the agent commit what it has, then
// hands the signal to whatever the job had installed, so the job's own behaviour and exit status
// stay the same (its handler runs; with the default action the process still dies of the signal).
#pragma once

namespace fleetscope::agent {

using SignalHook = void (*)(int signal_number);

// Installs (or re-installs, if the job replaced it since) the handler for SIGTERM, SIGINT and
// SIGABRT, chaining to the handler found there. Signals the job ignores stay ignored. Called when a
// window opens: an idle agent changes nothing.
void install_signal_chain(SignalHook hook);

}  // namespace fleetscope::agent
