// Plants launch_bound_small_kernels: every step launches 2000 kernels of one 32-thread block
// doing a few instructions, so launch overhead (~2-5 us each) dominates and the GPU idles between
// kernels.
#include "sample_common.h"

__global__ void tiny_kernel(float* x) {
  x[threadIdx.x] += 1.0f;
}

int main(int argc, char** argv) {
  auto o = sample::parse(argc, argv, "launch_bound", "plants: launch_bound_small_kernels", 50);
  sample::require_device();
  float* x = nullptr;
  SAMPLE_CHECK(cudaMalloc(&x, 32 * sizeof(float)));
  SAMPLE_CHECK(cudaMemset(x, 0, 32 * sizeof(float)));
  sample::Launched l;
  l.memsets = 1;
  constexpr int kPerStep = 2000;
  long steps = sample::run_steps(o, [&](long) {
    for (int i = 0; i < kPerStep; ++i) tiny_kernel<<<1, 32>>>(x);
    l.kernels += kPerStep;
    SAMPLE_CHECK(cudaGetLastError());
    SAMPLE_CHECK(cudaStreamSynchronize(0));
  });
  SAMPLE_CHECK(cudaFree(x));
  sample::report("launch_bound", steps, l);
  return 0;
}
