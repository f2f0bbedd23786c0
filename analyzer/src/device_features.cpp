#include "fleetscope/analyzer/device_features.h"

namespace fleetscope::analyzer {

std::optional<ComputeCapability> compute_capability(const CaptureData& data, int32_t device) {
  for (const store::GpuInfo& gpu : data.gpus) {
    if (gpu.id != device || !gpu.computeMajor || *gpu.computeMajor <= 0) continue;
    if (gpu.vendor != "nvidia" && !gpu.vendor.empty()) return std::nullopt;
    return ComputeCapability{*gpu.computeMajor, gpu.computeMinor.value_or(0)};
  }
  return std::nullopt;
}

}  // namespace fleetscope::analyzer
