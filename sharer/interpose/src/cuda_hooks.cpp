// The driver entry points the library wraps. Every allocation is charged to the lane *before* the
// real call (check-and-reserve in the ledger), so a job over its lane gets CUDA_ERROR_OUT_OF_MEMORY
// from its own call and the device never sees the request; a failed real call gives the charge
// back. Frees give back exactly what the allocation charged.

#include <algorithm>

#include "hook_table.h"
#include "lane_state.h"

using namespace fleetscope::interpose;

namespace {

CUresult missing_driver() {
  return CUDA_ERROR_NOT_INITIALIZED;
}

// Charges `bytes`, runs `allocate`, and refunds when it fails.
template <typename Allocate>
CUresult charged(uint64_t bytes, Allocate allocate) {
  LaneState& lane = LaneState::instance();
  if (!lane.charge(bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult result = allocate();
  if (result != CUDA_SUCCESS) lane.refund(bytes);
  return result;
}

CUresult allocate_async(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, bool charge_known_pool,
                        CUresult (*call)(CUdeviceptr*, size_t, CUmemoryPool, CUstream, void*),
                        CUstream stream, void* real) {
  LaneState& lane = LaneState::instance();
  if (!lane.enforcing()) return call(dptr, bytes, pool, stream, real);
  // Idle memory the pool already holds is already charged: reusing it costs nothing new.
  uint64_t reused = charge_known_pool && pool ? lane.take_idle(pool, bytes) : 0;
  uint64_t fresh = bytes - reused;
  if (!lane.charge(fresh)) {
    if (reused) lane.add_idle(pool, reused);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  CUresult result = call(dptr, bytes, pool, stream, real);
  if (result != CUDA_SUCCESS) {
    lane.refund(fresh);
    if (reused) lane.add_idle(pool, reused);
    return result;
  }
  lane.remember(*dptr, {bytes, AllocationKind::kPoolAsync, pool});
  return result;
}

CUresult call_alloc_async(CUdeviceptr* dptr, size_t bytes, CUmemoryPool, CUstream stream,
                          void* real) {
  return reinterpret_cast<cuMemAllocAsync_t>(real)(dptr, bytes, stream);
}

CUresult call_alloc_from_pool(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, CUstream stream,
                              void* real) {
  return reinterpret_cast<cuMemAllocFromPoolAsync_t>(real)(dptr, bytes, pool, stream);
}

// Gives back what freeing `dptr` releases: a plain allocation's bytes go back to the lane, a pool
// allocation's bytes become the pool's idle memory.
void account_free(CUdeviceptr dptr) {
  LaneState& lane = LaneState::instance();
  Allocation allocation;
  if (!lane.enforcing() || !lane.forget(dptr, &allocation)) return;
  if (allocation.kind == AllocationKind::kPoolAsync) {
    lane.add_idle(allocation.pool, allocation.bytes);
  } else {
    lane.refund(allocation.bytes);
  }
}

CUresult alloc_async_common(Hook hook, CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  void* real = reinterpret_cast<void*>(real_function<cuMemAllocAsync_t>(hook));
  if (!real) return missing_driver();
  LaneState& lane = LaneState::instance();
  CUmemoryPool pool = lane.enforcing() ? lane.current_pool() : nullptr;
  return allocate_async(dptr, bytes, pool, true, &call_alloc_async, stream, real);
}

CUresult alloc_from_pool_common(Hook hook, CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool,
                                CUstream stream) {
  void* real = reinterpret_cast<void*>(real_function<cuMemAllocFromPoolAsync_t>(hook));
  if (!real) return missing_driver();
  return allocate_async(dptr, bytes, pool, true, &call_alloc_from_pool, stream, real);
}

CUresult free_async_common(Hook hook, CUdeviceptr dptr, CUstream stream) {
  auto real = real_function<cuMemFreeAsync_t>(hook);
  if (!real) return missing_driver();
  CUresult result = real(dptr, stream);
  if (result == CUDA_SUCCESS) account_free(dptr);
  return result;
}

}  // namespace

extern "C" {

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
  auto real = real_function<cuMemAlloc_v2_t>(Hook::kMemAlloc);
  if (!real) return missing_driver();
  LaneState& lane = LaneState::instance();
  if (!lane.enforcing()) return real(dptr, bytes);
  CUresult result = charged(bytes, [&] { return real(dptr, bytes); });
  if (result == CUDA_SUCCESS) lane.remember(*dptr, {bytes, AllocationKind::kDevice, nullptr});
  return result;
}

CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned int flags) {
  // Managed memory may migrate to the host, but it can fill the device: it counts, as in HAMi-core.
  auto real = real_function<cuMemAllocManaged_t>(Hook::kMemAllocManaged);
  if (!real) return missing_driver();
  LaneState& lane = LaneState::instance();
  if (!lane.enforcing()) return real(dptr, bytes, flags);
  CUresult result = charged(bytes, [&] { return real(dptr, bytes, flags); });
  if (result == CUDA_SUCCESS) lane.remember(*dptr, {bytes, AllocationKind::kDevice, nullptr});
  return result;
}

CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                            unsigned int element_bytes) {
  auto real = real_function<cuMemAllocPitch_v2_t>(Hook::kMemAllocPitch);
  if (!real) return missing_driver();
  LaneState& lane = LaneState::instance();
  if (!lane.enforcing()) return real(dptr, pitch, width, height, element_bytes);
  // The pitch is known only afterwards: charge width x height first, then the padding.
  uint64_t requested = static_cast<uint64_t>(width) * height;
  CUresult result =
      charged(requested, [&] { return real(dptr, pitch, width, height, element_bytes); });
  if (result != CUDA_SUCCESS) return result;
  uint64_t actual = static_cast<uint64_t>(*pitch) * height;
  if (actual > requested && !lane.charge(actual - requested)) {
    if (auto free_real = real_function<cuMemFree_v2_t>(Hook::kMemFree)) free_real(*dptr);
    lane.refund(requested);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  lane.remember(*dptr, {std::max(actual, requested), AllocationKind::kDevice, nullptr});
  return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  auto real = real_function<cuMemFree_v2_t>(Hook::kMemFree);
  if (!real) return missing_driver();
  CUresult result = real(dptr);
  if (result == CUDA_SUCCESS) account_free(dptr);
  return result;
}

CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  auto real = real_function<cuMemGetInfo_v2_t>(Hook::kMemGetInfo);
  if (!real) return missing_driver();
  CUresult result = real(free_bytes, total_bytes);
  LaneState& lane = LaneState::instance();
  if (result != CUDA_SUCCESS || !lane.enforcing() || lane.broken()) return result;
  uint64_t capacity = lane.capacity();
  if (capacity == fleetscope::lanes::LaneSegment::kUnlimited) return result;
  // The job sees its lane: total = the lane's capacity, free = what the lane has left (never more
  // than the device really has free).
  uint64_t used = lane.lane_used();
  uint64_t lane_free = capacity > used ? capacity - used : 0;
  if (total_bytes) *total_bytes = static_cast<size_t>(std::min<uint64_t>(*total_bytes, capacity));
  if (free_bytes) *free_bytes = static_cast<size_t>(std::min<uint64_t>(*free_bytes, lane_free));
  return result;
}

CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  return alloc_async_common(Hook::kMemAllocAsync, dptr, bytes, stream);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  return alloc_async_common(Hook::kMemAllocAsyncPtsz, dptr, bytes, stream);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool,
                                 CUstream stream) {
  return alloc_from_pool_common(Hook::kMemAllocFromPoolAsync, dptr, bytes, pool, stream);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool,
                                      CUstream stream) {
  return alloc_from_pool_common(Hook::kMemAllocFromPoolAsyncPtsz, dptr, bytes, pool, stream);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  return free_async_common(Hook::kMemFreeAsync, dptr, stream);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) {
  return free_async_common(Hook::kMemFreeAsyncPtsz, dptr, stream);
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep_bytes) {
  auto real = real_function<cuMemPoolTrimTo_t>(Hook::kMemPoolTrimTo);
  if (!real) return missing_driver();
  CUresult result = real(pool, keep_bytes);
  LaneState& lane = LaneState::instance();
  if (result == CUDA_SUCCESS && lane.enforcing()) lane.pool_trimmed(pool, keep_bytes);
  return result;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t bytes,
                     const CUmemAllocationPropPrefix* prop, unsigned long long flags) {
  auto real = real_function<cuMemCreate_t>(Hook::kMemCreate);
  if (!real) return missing_driver();
  LaneState& lane = LaneState::instance();
  // Only physical memory on a device counts (host/NUMA locations do not fill the GPU).
  bool on_device = prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
  if (!lane.enforcing() || !on_device) return real(handle, bytes, prop, flags);
  CUresult result = charged(bytes, [&] { return real(handle, bytes, prop, flags); });
  if (result == CUDA_SUCCESS) lane.remember_handle(*handle, bytes);
  return result;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  auto real = real_function<cuMemRelease_t>(Hook::kMemRelease);
  if (!real) return missing_driver();
  CUresult result = real(handle);
  LaneState& lane = LaneState::instance();
  uint64_t bytes = 0;
  if (result == CUDA_SUCCESS && lane.enforcing() && lane.forget_handle(handle, &bytes))
    lane.refund(bytes);
  return result;
}

CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  auto real = real_function<cuGetProcAddress_t>(Hook::kGetProcAddress);
  if (!real) return missing_driver();
  CUresult result = real(symbol, pfn, version, flags);
  if (result == CUDA_SUCCESS && pfn && *pfn)
    *pfn = substitute_proc_address(symbol, *pfn, version, flags);
  return result;
}

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* status) {
  auto real = real_function<cuGetProcAddress_v2_t>(Hook::kGetProcAddressV2);
  if (!real) return missing_driver();
  CUresult result = real(symbol, pfn, version, flags, status);
  if (result == CUDA_SUCCESS && pfn && *pfn)
    *pfn = substitute_proc_address(symbol, *pfn, version, flags);
  return result;
}

}  // extern "C"
