#pragma once
// NVIDIA MPS (Multi-Process Service) as the sharer models it, to compare lanes against it: every
// job is its own MPS client process with its own CUDA context (the per-job context memory of the
// simulator), its memory is a static slice of its own (P + T + margin: a client's ephemeral memory
// is live while the others run, nobody takes turns), all clients run concurrently (the parallel
// interference model applies), and a GPU serves at most a fixed number of clients. NVIDIA's MPS
// documentation ("Limitations") gives 48 client CUDA contexts per device on Volta and newer GPUs
// and 16 before Volta.

#include "fleetscope/sharer/lane_allocator.h"

namespace fleetscope::sharer {

inline constexpr int kMpsClientsVolta = 48;
inline constexpr int kMpsClientsPreVolta = 16;

// Placement options of an MPS client on a GPU serving at most `max_clients` clients.
inline AdmitOptions mps_admit_options(int max_clients) {
  AdmitOptions options;
  options.allow_shared_lane = false;  // no time-sharing of a slice
  options.solo = true;                // the slice is the process's alone
  options.max_lanes = max_clients;    // one slice per client
  return options;
}

}  // namespace fleetscope::sharer
