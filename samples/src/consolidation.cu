// Plants consolidation_candidate (and low_gpu_utilization): a small inference-like job that holds
// 256 MiB (< 5 % of any data-center GPU) and runs one short kernel every 10 ms. Several such jobs
// could share one GPU.
#include <chrono>
#include <thread>

#include "sample_common.h"

__global__ void infer(int n, const float* w, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = w[i] * y[i] + 1.0f;
}

int main(int argc, char** argv) {
  auto o = sample::parse(argc, argv, "consolidation",
                         "plants: consolidation_candidate, low_gpu_utilization", 100);
  sample::require_device();
  constexpr size_t bytes = 256u << 20;
  constexpr int n = 1 << 20;
  float *w = nullptr, *y = nullptr;
  SAMPLE_CHECK(cudaMalloc(&w, bytes));
  SAMPLE_CHECK(cudaMalloc(&y, n * sizeof(float)));
  SAMPLE_CHECK(cudaMemset(w, 0, bytes));
  SAMPLE_CHECK(cudaMemset(y, 0, n * sizeof(float)));
  sample::Launched l;
  l.memsets = 2;
  long steps = sample::run_steps(o, [&](long) {
    infer<<<(n + 255) / 256, 256>>>(n, w, y);
    ++l.kernels;
    SAMPLE_CHECK(cudaStreamSynchronize(0));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // waiting for requests
  });
  SAMPLE_CHECK(cudaFree(w));
  SAMPLE_CHECK(cudaFree(y));
  sample::report("consolidation", steps, l);
  return 0;
}
