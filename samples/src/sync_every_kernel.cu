// Plants excessive_sync: cudaDeviceSynchronize after every kernel, so the CPU waits for each one
// and the next launch only starts after the GPU drained.
#include "sample_common.h"

__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main(int argc, char** argv) {
  auto o = sample::parse(argc, argv, "sync_every_kernel", "plants: excessive_sync", 100);
  sample::require_device();
  constexpr int n = 1 << 22;
  float *x = nullptr, *y = nullptr;
  SAMPLE_CHECK(cudaMalloc(&x, n * sizeof(float)));
  SAMPLE_CHECK(cudaMalloc(&y, n * sizeof(float)));
  SAMPLE_CHECK(cudaMemset(x, 0, n * sizeof(float)));
  SAMPLE_CHECK(cudaMemset(y, 0, n * sizeof(float)));
  sample::Launched l;
  l.memsets = 2;
  constexpr int kPerStep = 20;
  long steps = sample::run_steps(o, [&](long) {
    for (int i = 0; i < kPerStep; ++i) {
      saxpy<<<(n + 255) / 256, 256>>>(n, 1.0001f, x, y);
      ++l.kernels;
      SAMPLE_CHECK(cudaDeviceSynchronize());
    }
  });
  SAMPLE_CHECK(cudaFree(x));
  SAMPLE_CHECK(cudaFree(y));
  sample::report("sync_every_kernel", steps, l);
  return 0;
}
