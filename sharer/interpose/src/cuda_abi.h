#pragma once
// The few CUDA driver and NVML types and constants the interposition library needs, declared here
// so the library builds without the CUDA toolkit and never depends on its headers' version. Every
// value is the one in cuda.h (CUDA 13.0) and in NVML's documented nvml.h; cuda_abi_test.cpp checks
// them against the toolkit's cuda.h when one is installed.

#include <cstddef>
#include <cstdint>

namespace fleetscope::interpose {

using CUresult = int;  // enum cudaError_enum
inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
inline constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
inline constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
inline constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;

using CUdeviceptr = unsigned long long;  // CUdeviceptr_v2 on 64-bit targets
using CUdevice = int;
using CUstream = struct CUstream_st*;
using CUmemoryPool = struct CUmemPoolHandle_st*;
using CUmemGenericAllocationHandle = unsigned long long;
using cuuint64_t = uint64_t;
using CUdriverProcAddressQueryResult = int;  // enum

// cuGetProcAddress flags (CUdriverProcAddress_flags).
inline constexpr cuuint64_t CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 1u << 1;

// CUmemPool_attribute values used to learn how much idle memory a pool still holds.
inline constexpr int CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 5;
inline constexpr int CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 7;

// The leading fields of CUmemAllocationProp (the library reads nothing after `location`).
inline constexpr int CU_MEM_LOCATION_TYPE_DEVICE = 1;
struct CUmemLocationPrefix {
  int type;
  int id;
};
struct CUmemAllocationPropPrefix {
  int type;                    // CUmemAllocationType
  int requested_handle_types;  // CUmemAllocationHandleType
  CUmemLocationPrefix location;
};

// Driver entry points, by the signature of the symbol named in the comment.
using cuGetProcAddress_t = CUresult (*)(const char*, void**, int, cuuint64_t);  // cuGetProcAddress
using cuGetProcAddress_v2_t = CUresult (*)(const char*, void**, int, cuuint64_t,
                                           CUdriverProcAddressQueryResult*);
using cuMemAlloc_v2_t = CUresult (*)(CUdeviceptr*, size_t);
using cuMemAllocManaged_t = CUresult (*)(CUdeviceptr*, size_t, unsigned int);
using cuMemAllocPitch_v2_t = CUresult (*)(CUdeviceptr*, size_t*, size_t, size_t, unsigned int);
using cuMemFree_v2_t = CUresult (*)(CUdeviceptr);
using cuMemGetInfo_v2_t = CUresult (*)(size_t*, size_t*);
using cuMemAllocAsync_t = CUresult (*)(CUdeviceptr*, size_t, CUstream);
using cuMemAllocFromPoolAsync_t = CUresult (*)(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
using cuMemFreeAsync_t = CUresult (*)(CUdeviceptr, CUstream);
using cuMemPoolTrimTo_t = CUresult (*)(CUmemoryPool, size_t);
using cuMemPoolGetAttribute_t = CUresult (*)(CUmemoryPool, int, void*);
using cuMemCreate_t = CUresult (*)(CUmemGenericAllocationHandle*, size_t,
                                   const CUmemAllocationPropPrefix*, unsigned long long);
using cuMemRelease_t = CUresult (*)(CUmemGenericAllocationHandle);
using cuCtxGetDevice_t = CUresult (*)(CUdevice*);
using cuDeviceGetMemPool_t = CUresult (*)(CUmemoryPool*, CUdevice);
using cuCtxSynchronize_t = CUresult (*)();

// NVML.
using nvmlReturn_t = int;
inline constexpr nvmlReturn_t NVML_SUCCESS = 0;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct nvmlMemory_v2_t {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
using nvmlDeviceGetMemoryInfo_t = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using nvmlDeviceGetMemoryInfo_v2_t = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_v2_t*);
using nvmlDeviceGetUUID_t = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);

}  // namespace fleetscope::interpose
