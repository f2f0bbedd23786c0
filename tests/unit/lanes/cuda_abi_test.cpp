// The interposition library declares the driver ABI it needs itself (cuda_abi.h) so that it
// builds without the toolkit; here those declarations are checked against the toolkit's cuda.h.

#include <gtest/gtest.h>

#include "../../../sharer/interpose/src/cuda_abi.h"

#if __has_include(<cuda.h>)
#include <cuda.h>

#include <cstddef>
#include <type_traits>

namespace fs = fleetscope::interpose;

static_assert(fs::CUDA_ERROR_OUT_OF_MEMORY == ::CUDA_ERROR_OUT_OF_MEMORY);
static_assert(fs::CUDA_ERROR_NOT_INITIALIZED == ::CUDA_ERROR_NOT_INITIALIZED);
static_assert(fs::CUDA_ERROR_INVALID_VALUE == ::CUDA_ERROR_INVALID_VALUE);
static_assert(fs::CUDA_ERROR_NOT_FOUND == ::CUDA_ERROR_NOT_FOUND);
static_assert(sizeof(fs::CUresult) == sizeof(::CUresult));
static_assert(std::is_same_v<fs::CUdeviceptr, ::CUdeviceptr>);
static_assert(std::is_same_v<fs::CUmemGenericAllocationHandle, ::CUmemGenericAllocationHandle>);
static_assert(fs::CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM ==
              ::CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
static_assert(fs::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT == ::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
static_assert(fs::CU_MEMPOOL_ATTR_USED_MEM_CURRENT == ::CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
static_assert(fs::CU_MEM_LOCATION_TYPE_DEVICE == ::CU_MEM_LOCATION_TYPE_DEVICE);
static_assert(offsetof(fs::CUmemAllocationPropPrefix, location) ==
              offsetof(::CUmemAllocationProp, location));
static_assert(offsetof(fs::CUmemAllocationPropPrefix, location.type) ==
              offsetof(::CUmemAllocationProp, location) + offsetof(::CUmemLocation, type));
static_assert(sizeof(::CUdriverProcAddressQueryResult) ==
              sizeof(fs::CUdriverProcAddressQueryResult));

TEST(CudaAbi, MatchesTheToolkitHeader) {
  SUCCEED() << "checked at compile time against " << CUDA_VERSION;
}
#else
TEST(CudaAbi, MatchesTheToolkitHeader) {
  GTEST_SKIP() << "no cuda.h: the CUDA toolkit is not installed";
}
#endif
