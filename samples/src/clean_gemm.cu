// The clean program: a loop of large SGEMMs through cuBLAS (all SMs busy, no host gaps, no
// syncs inside the step). cuBLAS is loaded at run time (libcublas.so.13, else .so.12 as shipped
// with PyTorch) so the sample carries no 500 MB dependency; without it the sample uses its own
// tiled GEMM kernel and says so.
#include <cublas_v2.h>
#include <dlfcn.h>

#include "sample_common.h"

namespace {

constexpr int kTile = 32;

// Shared-memory tiled SGEMM, C = A * B for n x n matrices (n a multiple of kTile).
__global__ void tiled_sgemm(int n, const float* a, const float* b, float* c) {
  __shared__ float ta[kTile][kTile];
  __shared__ float tb[kTile][kTile];
  int row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; t += kTile) {
    ta[threadIdx.y][threadIdx.x] = a[row * n + t + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = b[(t + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < kTile; ++k) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  c[row * n + col] = acc;
}

struct Cublas {
  void* lib = nullptr;
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  bool load() {
    for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
      lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (lib) break;
    }
    if (!lib) return false;
    create = reinterpret_cast<decltype(create)>(dlsym(lib, "cublasCreate_v2"));
    destroy = reinterpret_cast<decltype(destroy)>(dlsym(lib, "cublasDestroy_v2"));
    sgemm = reinterpret_cast<decltype(sgemm)>(dlsym(lib, "cublasSgemm_v2"));
    return create && destroy && sgemm;
  }
};

}  // namespace

int main(int argc, char** argv) {
  auto o = sample::parse(argc, argv, "clean_gemm", "plants nothing (the clean reference)", 50);
  sample::require_device();
  constexpr int n = 4096;
  constexpr int kPerStep = 10;
  float *a = nullptr, *b = nullptr, *c = nullptr;
  SAMPLE_CHECK(cudaMalloc(&a, sizeof(float) * n * n));
  SAMPLE_CHECK(cudaMalloc(&b, sizeof(float) * n * n));
  SAMPLE_CHECK(cudaMalloc(&c, sizeof(float) * n * n));
  SAMPLE_CHECK(cudaMemset(a, 0, sizeof(float) * n * n));
  SAMPLE_CHECK(cudaMemset(b, 0, sizeof(float) * n * n));
  sample::Launched l;
  l.memsets = 2;
  Cublas cublas;
  cublasHandle_t handle = nullptr;
  bool use_cublas = cublas.load() && cublas.create(&handle) == CUBLAS_STATUS_SUCCESS;
  if (!use_cublas)
    std::fprintf(stderr, "clean_gemm: cuBLAS not found; using the built-in tiled GEMM\n");
  const float alpha = 1.0f, beta = 0.0f;
  long steps = sample::run_steps(o, [&](long) {
    for (int i = 0; i < kPerStep; ++i) {
      if (use_cublas) {
        if (cublas.sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, n, b, n, &beta, c,
                         n) != CUBLAS_STATUS_SUCCESS) {
          std::fprintf(stderr, "error: cublasSgemm failed\n");
          std::exit(1);
        }
      } else {
        tiled_sgemm<<<dim3(n / kTile, n / kTile), dim3(kTile, kTile)>>>(n, a, b, c);
      }
    }
    SAMPLE_CHECK(cudaGetLastError());
    // One sync per step (to end the step range in time), none between GEMMs.
    SAMPLE_CHECK(cudaStreamSynchronize(0));
  });
  long gemms = steps * kPerStep;
  if (use_cublas) {
    l.kernels = -1;  // cuBLAS picks the kernels (one or more per call)
    l.min_kernels = gemms;
    cublas.destroy(handle);
  } else {
    l.kernels = gemms;
  }
  SAMPLE_CHECK(cudaFree(a));
  SAMPLE_CHECK(cudaFree(b));
  SAMPLE_CHECK(cudaFree(c));
  sample::report("clean_gemm", steps, l);
  return 0;
}
