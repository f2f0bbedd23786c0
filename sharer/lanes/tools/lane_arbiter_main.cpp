// fleetscope-lane-arbiter: hosts the iteration gate's arbiter on a Unix socket until SIGINT or
// SIGTERM, for jobs started by hand or by scripts/gpu-check until the daemon hosts it.
//   fleetscope-lane-arbiter --socket PATH [--policy fifo|srtf|priority]
//   fleetscope-lane-arbiter --grant LANE --bytes SIZE [--dir DIR]
// --grant makes a lane's ledger as fleetscoped does (its size and a fresh grant token, in DIR or
// $FLEETSCOPE_LANE_DIR or /dev/shm) and prints the token for the job's FLEETSCOPE_LANE_TOKEN:
// the interposition library joins only granted lanes.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include "fleetscope/common/args.h"
#include "fleetscope/lanes/gate_arbiter.h"
#include "fleetscope/lanes/gate_server.h"
#include "fleetscope/lanes/lane_environment.h"
#include "fleetscope/lanes/lane_segment.h"
#include "fleetscope/lanes/turn_policy.h"

namespace {

int grant(int argc, char** argv) {
  using fleetscope::lanes::LaneSegment;
  std::string lane, bytes, directory;
  const char* from_environment = std::getenv("FLEETSCOPE_LANE_DIR");
  directory = from_environment && *from_environment ? from_environment : "/dev/shm";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    (arg == "--grant" ? lane : arg == "--bytes" ? bytes : directory) = argv[i + 1];
    if (arg != "--grant" && arg != "--bytes" && arg != "--dir") lane.clear();
  }
  const auto size = fleetscope::lanes::parse_byte_size(bytes);
  if (argc % 2 == 0 || lane.empty() || !LaneSegment::valid_lane_id(lane) || !size) {
    std::fprintf(stderr,
                 "usage: fleetscope-lane-arbiter --grant LANE --bytes SIZE [--dir DIR] (LANE: "
                 "[A-Za-z0-9._-]{1,100}; SIZE: bytes or 8GiB, 512MiB ...; 0: no memory cap)\n");
    return 2;
  }
  const std::string path = LaneSegment::path_for_lane(directory, lane);
  std::string error;
  std::unique_ptr<LaneSegment> existing = LaneSegment::open_existing(path, &error);
  if (existing) {
    std::fprintf(stderr, "fleetscope-lane-arbiter: %s exists already (lane granted before)\n",
                 path.c_str());
    return 1;
  }
  const std::string token = LaneSegment::new_grant_token();
  if (!LaneSegment::open_or_create(path, *size > 0 ? *size : LaneSegment::kUnlimited, &error,
                                   token)) {
    std::fprintf(stderr, "fleetscope-lane-arbiter: %s\n", error.c_str());
    return 1;
  }
  std::printf("%s\n", token.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--grant") return grant(argc, argv);
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
