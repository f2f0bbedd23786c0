#include <gtest/gtest.h>

#include "fleetscope/store/reader.h"

using fleetscope::store::short_kernel_name;

// Expected values are what nsys reports as shortName for these demangled names.
TEST(ShortKernelName, StripsReturnTypeNamespacesTemplatesAndArgs) {
  EXPECT_EQ(short_kernel_name("void at::native::vectorized_elementwise_kernel<4, at::native::"
                              "FillFunctor<float>, at::detail::Array<char*, 1> >(int, "
                              "at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"),
            "vectorized_elementwise_kernel");
  EXPECT_EQ(short_kernel_name("ampere_sgemm_128x64_nn"), "ampere_sgemm_128x64_nn");
  EXPECT_EQ(short_kernel_name("void (anonymous namespace)::softmax_warp_forward<float>(float*)"),
            "softmax_warp_forward");
  EXPECT_EQ(short_kernel_name(
                "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"),
            "ncclKernel_AllReduce_RING_LL_Sum_float");
  EXPECT_EQ(short_kernel_name("Memcpy HtoD (Pageable -> Device)"),
            "Memcpy HtoD (Pageable -> Device)");
}
