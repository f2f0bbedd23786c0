// The shared hand-computed capture of metrics_test.cpp, in memory (see the table there).
#pragma once

#include <string>

#include "capture_builder.h"

namespace fleetscope::analyzer::testing {

constexpr int64_t kSharedBase = 1'000'000'000;

// `delayed_gemm`: the name of the kernel at 400-500 µs (the report test gives it characters that
// need escaping).
inline CaptureData shared_case(const std::string& delayed_gemm = "gemm") {
  CaptureBuilder b;
  auto at = [](int64_t t_us) { return kSharedBase + us(t_us); };
  auto call = [&](int64_t s, int64_t e) { return std::make_pair(at(s), at(e)); };
  b.kernel(at(0), at(100), 7, "gemm", 0, call(-10, -5));
  b.memcpy(at(290), at(320), 7, store::kMemcpyHtoD, store::kMemPageable, store::kMemDevice, 4096,
           call(280, 285));
  b.kernel(at(400), at(500), 7, delayed_gemm, 0, call(250, 255));
  b.kernel(at(50), at(150), 8, "gemm", 0, call(40, 45));
  b.kernel(at(160), at(170), 8, "add", 0, call(100, 112));
  b.kernel(at(200), at(300), 9, "ncclKernel_AllReduce_RING_LL_Sum_float", 0);
  return b.build();
}

}  // namespace fleetscope::analyzer::testing
