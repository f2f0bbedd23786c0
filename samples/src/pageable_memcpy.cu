// Plants pageable_memcpy: cudaMemcpyAsync from malloc'd (pageable) host memory. The driver stages
// the data through a pinned bounce buffer, so the "async" copy blocks the CPU and cannot overlap.
#include <cstdlib>
#include <vector>

#include "sample_common.h"

__global__ void scale(int n, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= 0.5f;
}

int main(int argc, char** argv) {
  auto o = sample::parse(argc, argv, "pageable_memcpy", "plants: pageable_memcpy", 50);
  sample::require_device();
  constexpr int n = 1 << 24;         // 64 MiB per copy
  std::vector<float> host(n, 1.0f);  // pageable on purpose
  float* device = nullptr;
  cudaStream_t stream;
  SAMPLE_CHECK(cudaStreamCreate(&stream));
  SAMPLE_CHECK(cudaMalloc(&device, n * sizeof(float)));
  sample::Launched l;
  long steps = sample::run_steps(o, [&](long) {
    SAMPLE_CHECK(
        cudaMemcpyAsync(device, host.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
    scale<<<(n + 255) / 256, 256, 0, stream>>>(n, device);
    SAMPLE_CHECK(
        cudaMemcpyAsync(host.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
    l.memcpys += 2;
    l.kernels += 1;
    SAMPLE_CHECK(cudaStreamSynchronize(stream));
  });
  SAMPLE_CHECK(cudaFree(device));
  SAMPLE_CHECK(cudaStreamDestroy(stream));
  sample::report("pageable_memcpy", steps, l);
  return 0;
}
