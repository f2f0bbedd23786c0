// Plants host_bound and gpu_idle_gaps: each step spends ~20 ms of CPU work (a stand-in for data
// loading / preprocessing) before ~1 ms of GPU work, so the GPU idles most of the time.
#include <chrono>
#include <cmath>

#include "sample_common.h"

__global__ void work(int n, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = sqrtf(y[i] * y[i] + 1.0f);
}

static volatile double g_sink;

static void cpu_work(std::chrono::milliseconds budget) {
  auto end = std::chrono::steady_clock::now() + budget;
  double acc = 0;
  while (std::chrono::steady_clock::now() < end)
    for (int i = 0; i < 1000; ++i) acc += std::sqrt(static_cast<double>(i) + acc);
  g_sink = acc;
}

int main(int argc, char** argv) {
  auto o = sample::parse(argc, argv, "host_bound", "plants: host_bound, gpu_idle_gaps", 50);
  sample::require_device();
  constexpr int n = 1 << 22;
  float* y = nullptr;
  SAMPLE_CHECK(cudaMalloc(&y, n * sizeof(float)));
  SAMPLE_CHECK(cudaMemset(y, 0, n * sizeof(float)));
  sample::Launched l;
  l.memsets = 1;
  long steps = sample::run_steps(o, [&](long) {
    cpu_work(std::chrono::milliseconds(20));
    for (int i = 0; i < 4; ++i) work<<<(n + 255) / 256, 256>>>(n, y);
    l.kernels += 4;
    SAMPLE_CHECK(cudaStreamSynchronize(0));
  });
  SAMPLE_CHECK(cudaFree(y));
  sample::report("host_bound", steps, l);
  return 0;
}
