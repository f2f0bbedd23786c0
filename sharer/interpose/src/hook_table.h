#pragma once
// The entry points the library wraps: exported name, the base name cuGetProcAddress is asked for,
// the versions for which the driver hands out that variant, and the real address once known.

#include <atomic>

#include "cuda_abi.h"

// The wrappers are exported (they interpose on libcuda.so.1 / libnvidia-ml.so.1); everything
// else in the library is hidden.
extern "C" {
using namespace fleetscope::interpose;
#pragma GCC visibility push(default)
CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags);
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* status);
CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes);
CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned int flags);
CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                            unsigned int element_bytes);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes);
CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream stream);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUstream stream);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool,
                                 CUstream stream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool,
                                      CUstream stream);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream);
CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep_bytes);
CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t bytes,
                     const CUmemAllocationPropPrefix* prop, unsigned long long flags);
CUresult cuMemRelease(CUmemGenericAllocationHandle handle);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory);
#pragma GCC visibility pop
}

namespace fleetscope::interpose {

enum class Hook : int {
  kGetProcAddress,
  kGetProcAddressV2,
  kMemAlloc,
  kMemAllocManaged,
  kMemAllocPitch,
  kMemFree,
  kMemGetInfo,
  kMemAllocAsync,
  kMemAllocAsyncPtsz,
  kMemAllocFromPoolAsync,
  kMemAllocFromPoolAsyncPtsz,
  kMemFreeAsync,
  kMemFreeAsyncPtsz,
  kMemPoolTrimTo,
  kMemCreate,
  kMemRelease,
  kNvmlMemoryInfo,
  kNvmlMemoryInfoV2,
  kCount
};

struct HookEntry {
  const char* exported_name;
  const char* base_name;   // what cuGetProcAddress is asked for (nullptr: NVML)
  int min_version;         // cuGetProcAddress hands out this variant from this CUDA version on...
  int max_version;         // ...up to this one
  bool per_thread_stream;  // the _ptsz variant
  void* wrapper;
  std::atomic<void*> real;
};

HookEntry& hook_entry(Hook hook);
// The entry exported as `name`, or nullptr.
HookEntry* find_hook(const char* name);
// Records `real` as the real address behind `entry` (ignored when it is our own wrapper).
void note_real(HookEntry& entry, void* real);

// Looks the real address of `entry` up (see real_symbols.h); nullptr when the library is absent.
void* resolve_real(HookEntry& entry);

// The real function behind a hook (resolved on first use); nullptr when the library is absent.
template <typename Function>
Function real_function(Hook hook) {
  HookEntry& entry = hook_entry(hook);
  void* real = entry.real.load(std::memory_order_acquire);
  if (!real) real = resolve_real(entry);
  return reinterpret_cast<Function>(real);
}

// cuGetProcAddress answered `real` for `base_name`: returns our wrapper when we wrap that variant.
void* substitute_proc_address(const char* base_name, void* real, int version, cuuint64_t flags);

}  // namespace fleetscope::interpose
