// fleetscope-lane-arbiter: hosts the iteration gate's arbiter on a Unix socket until SIGINT or
// SIGTERM, for jobs started by hand or by scripts/gpu-check until the daemon hosts it.
//   fleetscope-lane-arbiter --socket PATH [--policy fifo|srtf|priority]
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "fleetscope/common/args.h"
#include "fleetscope/lanes/gate_arbiter.h"
#include "fleetscope/lanes/gate_server.h"
#include "fleetscope/lanes/turn_policy.h"

int main(int argc, char** argv) {
  std::string socket_path, policy = "fifo";
  bool show_version = false;
  fleetscope::common::ArgParser parser(
      "fleetscope-lane-arbiter --socket PATH [--policy fifo|srtf|priority]",
      "Hosts the iteration gate's arbiter of shared GPU lanes on a Unix socket until SIGINT or "
      "SIGTERM (docs/sharer.md).");
  parser.option("--socket", "PATH", "Unix socket to serve the gate on", &socket_path)
      .option("--policy", "NAME", "whose turn comes next: fifo, srtf or priority [fifo]", &policy)
      .flag("--version", "print the version and exit", &show_version);
  if (auto code =
          parser.parse(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr))
    return *code;
  if (show_version) {
    std::printf("fleetscope-lane-arbiter %s\n", FLEETSCOPE_LANE_ARBITER_VERSION);
    return 0;
  }
  if (socket_path.empty() || !fleetscope::lanes::make_turn_policy(policy)) {
    std::fprintf(
        stderr,
        "fleetscope-lane-arbiter: need --socket PATH and a policy among fifo, srtf, priority\n");
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // the server thread inherits the mask
  fleetscope::lanes::GateArbiter arbiter(policy);
  fleetscope::lanes::GateServer server(arbiter, socket_path);
  std::string error;
  if (!server.start(&error)) {
    std::fprintf(stderr, "fleetscope-lane-arbiter: %s\n", error.c_str());
    return 1;
  }
  std::fprintf(stderr, "fleetscope-lane-arbiter: %s policy on %s\n", policy.c_str(),
               socket_path.c_str());
  int received = 0;
  sigwait(&signals, &received);
  server.stop();
  return 0;
}
