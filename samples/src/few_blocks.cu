// Plants few_blocks: a long-running kernel launched with 2 blocks, far fewer than the GPU's SMs
// (108 on A100, 132 on H100), so most SMs stay idle while the GPU looks "busy".
#include "sample_common.h"

__global__ void long_loop(int n, float* y) {
  // Grid-stride loop: correct for any grid size, so the only defect is the grid itself.
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    for (int k = 0; k < 64; ++k) y[i] = y[i] * 0.999f + 0.001f;
}

int main(int argc, char** argv) {
  auto o = sample::parse(argc, argv, "few_blocks", "plants: few_blocks", 20);
  sample::require_device();
  constexpr int n = 1 << 20;
  float* y = nullptr;
  SAMPLE_CHECK(cudaMalloc(&y, n * sizeof(float)));
  SAMPLE_CHECK(cudaMemset(y, 0, n * sizeof(float)));
  sample::Launched l;
  l.memsets = 1;
  long steps = sample::run_steps(o, [&](long) {
    long_loop<<<2, 256>>>(n, y);
    ++l.kernels;
    SAMPLE_CHECK(cudaStreamSynchronize(0));
  });
  SAMPLE_CHECK(cudaFree(y));
  sample::report("few_blocks", steps, l);
  return 0;
}
