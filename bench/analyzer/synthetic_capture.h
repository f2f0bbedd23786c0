// A synthetic capture shaped like a training job, written straight into the analyzer's columnar
// arrays (no database): `gpu_events` GPU events on 2 devices x 4 streams, each launched by its
// own runtime call (so as many runtime rows again), 90 % kernels (200 names, 2-200 µs, one in ten
// shorter than its 4-12 µs launch call), 8 % memcpys (a quarter of them pageable, some through
// synchronous cudaMemcpy), 2 % memsets, steps of 2,000 events per device with a DataLoader fetch
// at the start of each, and a 0.6 s stall every 500,000 events; grid sizes and occupancy per
// kernel, a CPU op around every fourth launch call, two 132-SM 80 GB GPUs, and a 20 GiB + 2 GiB
// per-step memory pattern, so every rule has its input. Deterministic (fixed seed).
#pragma once

#include <cstddef>

#include "fleetscope/analyzer/capture_data.h"

namespace fleetscope::analyzer::bench {

CaptureData synthetic_capture(size_t gpu_events);

}  // namespace fleetscope::analyzer::bench
