#pragma once
// Public specification figures of the major data-centre GPUs, the input of the GPU-type advisor
// (gpu_advice.h). Every figure is the vendor's datasheet peak (dense, without structured
// sparsity), per GPU (a K80 board holds two GPUs: one of them here). Sources are named per row in
// gpu_specs.cpp. Peak figures are what a kernel reaches at best; the advisor only uses their
// ratios between two GPUs.

#include <optional>
#include <string>
#include <vector>

namespace fleetscope::sharer {

struct GpuSpec {
  std::string id;          // "V100-SXM2", "A100-80GB-SXM4", ...: what --from/--to accept
  double fp32_tflops = 0;  // FP32 (non-tensor) peak
  // FP16 matrix peak: tensor cores from Volta on (dense); before Volta the FP16 rate of the
  // CUDA cores (P100: packed half2), or the FP32 rate where FP16 runs no faster (K80).
  double fp16_matrix_tflops = 0;
  double memory_gbs = 0;            // DRAM bandwidth, GB/s
  double memory_gib = 0;            // device memory
  double host_link_gbs = 0;         // PCIe to the host, per direction, GB/s
  double peer_link_gbs = 0;         // GPU-to-GPU in one node (NVLink, else PCIe), per direction
  std::string source;               // where the figures come from
  std::vector<std::string> tokens;  // lower-case name tokens that must all appear to match
};

// The table, in a fixed order (older generations first).
const std::vector<GpuSpec>& gpu_specs();

// The spec whose tokens all appear in `device_name` (TARGET_INFO_GPU.name such as "Tesla
// V100-SXM2-32GB" or "NVIDIA A100-SXM4-80GB", or an id of the table), the most specific one when
// several match (most tokens). Tokens are the name's alphanumeric runs, lower-cased, so "A10"
// never matches "A100". nullopt when none matches.
std::optional<GpuSpec> find_gpu_spec(const std::string& device_name);

}  // namespace fleetscope::sharer
