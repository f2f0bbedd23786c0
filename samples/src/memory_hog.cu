// Plants memory_near_capacity: allocates until more than 90 % of the device memory is in use
// (93 % of the total, or what is free minus 64 MiB if less), then runs ordinary kernels.
#include <vector>

#include "sample_common.h"

__global__ void touch(size_t n, float* y) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    y[i] += 1.0f;
}

int main(int argc, char** argv) {
  auto o = sample::parse(argc, argv, "memory_hog", "plants: memory_near_capacity", 20);
  sample::require_device();
  // The buffer the kernels touch, then filler blocks up to the target.
  constexpr size_t work_bytes = 256u << 20;
  float* work = nullptr;
  SAMPLE_CHECK(cudaMalloc(&work, work_bytes));
  size_t free_bytes = 0, total_bytes = 0;
  SAMPLE_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  size_t want = total_bytes / 100 * 93;
  size_t already_used = total_bytes - free_bytes;
  size_t to_allocate = want > already_used ? want - already_used : 0;
  if (to_allocate + (64u << 20) > free_bytes)
    to_allocate = free_bytes > (64u << 20) ? free_bytes - (64u << 20) : 0;
  // Several chunks, as a framework's caching allocator would hold them.
  constexpr size_t chunk = 1u << 30;
  std::vector<void*> blocks;
  for (size_t done = 0; done < to_allocate;) {
    size_t size = to_allocate - done < chunk ? to_allocate - done : chunk;
    void* p = nullptr;
    SAMPLE_CHECK(cudaMalloc(&p, size));
    blocks.push_back(p);
    done += size;
  }
  size_t now_free = 0;
  SAMPLE_CHECK(cudaMemGetInfo(&now_free, &total_bytes));
  std::fprintf(
      stderr, "memory_hog: %.1f %% of %.1f GiB in use\n",
      100.0 * static_cast<double>(total_bytes - now_free) / static_cast<double>(total_bytes),
      static_cast<double>(total_bytes) / (1u << 30));
  sample::Launched l;
  long steps = sample::run_steps(o, [&](long) {
    touch<<<1024, 256>>>(work_bytes / sizeof(float), work);
    ++l.kernels;
    SAMPLE_CHECK(cudaStreamSynchronize(0));
  });
  for (void* p : blocks) SAMPLE_CHECK(cudaFree(p));
  SAMPLE_CHECK(cudaFree(work));
  sample::report("memory_hog", steps, l);
  return 0;
}
