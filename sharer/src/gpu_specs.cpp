#include "fleetscope/sharer/gpu_specs.h"

#include <cctype>
#include <set>

namespace fleetscope::sharer {

namespace {

// PCIe x16 per direction: gen3 16 GB/s, gen4 32 GB/s, gen5 64 GB/s (the datasheets quote both
// directions together: 32, 64 and 128 GB/s). NVLink per direction is half the datasheet's total.
constexpr double kPcie3 = 16, kPcie4 = 32, kPcie5 = 64;

std::vector<GpuSpec> build_table() {
  // id, FP32, FP16 matrix, DRAM GB/s, GiB, host link, peer link, source, tokens
  return {
      {"K80",
       4.37,
       4.37,
       240,
       12,
       kPcie3,
       kPcie3,
       "NVIDIA Tesla K80 datasheet: per board 8.73 TFLOPS FP32 (GPU Boost), 480 GB/s, 24 GB, "
       "two GPUs; halved per GPU; no faster FP16",
       {"k80"}},
      {"P100-PCIe",
       9.3,
       18.7,
       732,
       16,
       kPcie3,
       kPcie3,
       "NVIDIA Tesla P100 datasheet, PCIe 16 GB: 9.3 TFLOPS FP32, 18.7 FP16, 732 GB/s",
       {"p100"}},
      {"P100-SXM2",
       10.6,
       21.2,
       732,
       16,
       kPcie3,
       80,
       "NVIDIA Tesla P100 datasheet, NVLink (SXM2): 10.6 TFLOPS FP32, 21.2 FP16, 732 GB/s, "
       "NVLink 160 GB/s",
       {"p100", "sxm2"}},
      {"V100-PCIe",
       14,
       112,
       900,
       32,
       kPcie3,
       kPcie3,
       "NVIDIA V100 datasheet, PCIe: 14 TFLOPS FP32, 112 tensor, 900 GB/s",
       {"v100", "pcie"}},
      {"V100-SXM2",
       15.7,
       125,
       900,
       32,
       kPcie3,
       150,
       "NVIDIA V100 datasheet, SXM2: 15.7 TFLOPS FP32, 125 tensor, 900 GB/s, NVLink 300 GB/s",
       {"v100"}},
      {"T4",
       8.1,
       65,
       320,
       16,
       kPcie3,
       kPcie3,
       "NVIDIA T4 datasheet: 8.1 TFLOPS FP32, 65 FP16 tensor, 320 GB/s",
       {"t4"}},
      {"A10",
       31.2,
       125,
       600,
       24,
       kPcie4,
       kPcie4,
       "NVIDIA A10 datasheet: 31.2 TFLOPS FP32, 125 FP16 tensor (250 with sparsity), 600 GB/s",
       {"a10"}},
      {"A100-40GB-PCIe",
       19.5,
       312,
       1555,
       40,
       kPcie4,
       kPcie4,
       "NVIDIA A100 datasheet, 40 GB PCIe: 19.5 TFLOPS FP32, 312 FP16 tensor, 1,555 GB/s",
       {"a100", "pcie"}},
      {"A100-80GB-PCIe",
       19.5,
       312,
       1935,
       80,
       kPcie4,
       kPcie4,
       "NVIDIA A100 datasheet, 80 GB PCIe: 19.5 TFLOPS FP32, 312 FP16 tensor, 1,935 GB/s",
       {"a100", "80gb", "pcie"}},
      {"A100-40GB-SXM4",
       19.5,
       312,
       1555,
       40,
       kPcie4,
       300,
       "NVIDIA A100 datasheet, 40 GB SXM4: 19.5 TFLOPS FP32, 312 FP16 tensor, 1,555 GB/s, "
       "NVLink 600 GB/s",
       {"a100"}},
      {"A100-80GB-SXM4",
       19.5,
       312,
       2039,
       80,
       kPcie4,
       300,
       "NVIDIA A100 datasheet, 80 GB SXM4: 19.5 TFLOPS FP32, 312 FP16 tensor, 2,039 GB/s, "
       "NVLink 600 GB/s",
       {"a100", "80gb"}},
      {"L4",
       30.3,
       121,
       300,
       24,
       kPcie4,
       kPcie4,
       "NVIDIA L4 datasheet: 30.3 TFLOPS FP32, 242 FP16 tensor with sparsity (121 dense), "
       "300 GB/s",
       {"l4"}},
      {"L40S",
       91.6,
       362,
       864,
       48,
       kPcie4,
       kPcie4,
       "NVIDIA L40S datasheet: 91.6 TFLOPS FP32, 733 FP16 tensor with sparsity (362 dense), "
       "864 GB/s",
       {"l40s"}},
      {"H100-PCIe",
       51,
       756,
       2000,
       80,
       kPcie5,
       kPcie5,
       "NVIDIA H100 datasheet, PCIe: 51 TFLOPS FP32, 1,513 FP16 tensor with sparsity (756 "
       "dense), 2 TB/s",
       {"h100", "pcie"}},
      {"H100-SXM",
       67,
       989,
       3350,
       80,
       kPcie5,
       450,
       "NVIDIA H100 datasheet, SXM: 67 TFLOPS FP32, 1,979 FP16 tensor with sparsity (989 dense), "
       "3.35 TB/s, NVLink 900 GB/s",
       {"h100"}},
      {"H200-SXM",
       67,
       989,
       4800,
       141,
       kPcie5,
       450,
       "NVIDIA H200 datasheet, SXM: 67 TFLOPS FP32, 1,979 FP16 tensor with sparsity (989 dense), "
       "4.8 TB/s, 141 GB, NVLink 900 GB/s",
       {"h200"}},
  };
}

std::set<std::string> name_tokens(const std::string& name) {
  std::set<std::string> tokens;
  std::string token;
  for (const char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      token.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else if (!token.empty()) {
      tokens.insert(token);
      token.clear();
    }
  }
  if (!token.empty()) tokens.insert(token);
  return tokens;
}

}  // namespace

const std::vector<GpuSpec>& gpu_specs() {
  static const std::vector<GpuSpec> table = build_table();
  return table;
}

std::optional<GpuSpec> find_gpu_spec(const std::string& device_name) {
  const auto tokens = name_tokens(device_name);
  // An id of the table matches itself exactly ("A100-80GB-SXM4" also holds the tokens of
  // "A100-40GB-SXM4"'s name, which the token rule would accept too).
  for (const auto& spec : gpu_specs()) {
    if (name_tokens(spec.id) == tokens) return spec;
  }
  const GpuSpec* best = nullptr;
  for (const auto& spec : gpu_specs()) {
    bool all = true;
    for (const auto& token : spec.tokens) all = all && tokens.count(token) > 0;
    if (all && (!best || spec.tokens.size() > best->tokens.size())) best = &spec;
  }
  if (!best) return std::nullopt;
  return *best;
}

}  // namespace fleetscope::sharer
