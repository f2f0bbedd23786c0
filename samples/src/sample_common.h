// Shared by the sample programs: argument parsing (--seconds / --iterations), NVTX `step` ranges,
// CUDA error checks, and the closing line that scripts/gpu-check compares with the trace.
#pragma once

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace sample {

#define SAMPLE_CHECK(call)                                                                \
  do {                                                                                    \
    cudaError_t status_ = (call);                                                         \
    if (status_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "error: %s failed: %s\n", #call, cudaGetErrorString(status_)); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

struct Options {
  long iterations = 0;  // 0 = run for `seconds`
  double seconds = 0;
};

inline Options parse(int argc, char** argv, const char* name, const char* plants,
                     long default_iterations) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if ((arg == "--iterations" || arg == "--seconds") && i + 1 < argc) {
      (arg == "--iterations" ? o.iterations = std::atol(argv[++i])
                             : (o.seconds = std::atof(argv[++i]), 0L));
    } else if (arg == "--help" || arg == "-h") {
      std::printf("usage: %s [--iterations N | --seconds S]\n%s\n", name, plants);
      std::exit(0);
    } else {
      std::fprintf(stderr,
                   "error: unknown argument '%s'\nusage: %s [--iterations N | --seconds S]\n",
                   arg.c_str(), name);
      std::exit(2);
    }
  }
  if (o.iterations <= 0 && o.seconds <= 0) o.iterations = default_iterations;
  return o;
}

// Counts what the program asked the GPU to do, to compare with what the trace captured.
// kernels = -1 when a library (cuBLAS) decides how many kernels a call launches; min_kernels is
// then the lower bound (one per call).
struct Launched {
  long kernels = 0, memcpys = 0, memsets = 0;
  long min_kernels = -1;
};

// Runs `body(step)` inside an NVTX range named "step" (the agent's default iteration marker)
// until the iteration count or the time budget is reached. Returns the number of steps run.
// Seconds the step loop took, synchronized by the samples at each step end (gpu-check overhead).
inline double g_loop_seconds = 0;

template <class Body>
long run_steps(const Options& o, Body&& body) {
  auto start = std::chrono::steady_clock::now();
  long step = 0;
  for (;; ++step) {
    if (o.iterations > 0 && step >= o.iterations) break;
    if (o.iterations <= 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >=
            o.seconds)
      break;
    nvtxRangePushA("step");
    body(step);
    nvtxRangePop();
  }
  g_loop_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return step;
}

inline void report(const char* name, long steps, const Launched& l) {
  std::printf(
      "sample=%s iterations=%ld kernels=%ld min_kernels=%ld memcpys=%ld memsets=%ld "
      "loop_seconds=%.6f\n",
      name, steps, l.kernels, l.min_kernels < 0 ? l.kernels : l.min_kernels, l.memcpys, l.memsets,
      g_loop_seconds);
}

inline void require_device() {
  int count = 0;
  SAMPLE_CHECK(cudaGetDeviceCount(&count));
  if (count == 0) {
    std::fprintf(stderr, "error: no CUDA device\n");
    std::exit(1);
  }
}

}  // namespace sample
