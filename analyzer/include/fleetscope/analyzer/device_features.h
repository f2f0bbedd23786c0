// What a GPU can do, from its compute capability (TARGET_INFO_GPU.computeMajor/computeMinor), so
// that rules never recommend a feature the device lacks. Facts from the CUDA C++ Programming
// Guide, "Compute Capabilities" and "Tensor Cores": tensor cores from 7.0 (Volta: fp16 inputs);
// TF32 and bf16 tensor-core math from 8.0 (Ampere on).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fleetscope/analyzer/capture_data.h"

namespace fleetscope::analyzer {

struct ComputeCapability {
  int major = 0, minor = 0;
  std::string text() const { return std::to_string(major) + "." + std::to_string(minor); }
  bool at_least(int want_major, int want_minor) const {
    return major != want_major ? major > want_major : minor >= want_minor;
  }
  bool has_tensor_cores() const { return at_least(7, 0); }
  bool has_tf32() const { return at_least(8, 0); }
  bool has_bf16() const { return at_least(8, 0); }
};

// The device's compute capability, when the capture records it (an NVIDIA GPU's TARGET_INFO_GPU
// row with computeMajor); none for other vendors or traces without device properties.
std::optional<ComputeCapability> compute_capability(const CaptureData& data, int32_t device);

}  // namespace fleetscope::analyzer
