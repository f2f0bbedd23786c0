#pragma once
// The one memory model of memory lanes (docs/sharer.md, "The memory model"). The simulator, the
// planner, the daemon's sharing service (through LaneAllocator) and the GUI all admit jobs with
// it, so the same jobs get the same answer everywhere:
//
//   - P, T and the statistical margin (safety.h): a lane holds its jobs when
//       sum_i P_i + max_k (T_k + z * sigma_k) <= C_lane      (rounded up to 2 MiB);
//   - the CUDA context: every job process holds one on its GPU, outside its lane (the lane's
//     ledger counts the job's allocations, not the driver's context), so a GPU holds its lanes
//     when  sum_lanes C_lane + jobs * context_bytes <= C_gpu;
//   - the lane shape: a lane is a byte budget, not an address range (LaneShape below).
//
// The context's size is configurable: `cuda_context_mib` in the host's config file
// (fleetscoped.conf, where `scripts/gpu-check` writes the figure it measures on a GPU), else
// Salus's 300 MiB.

#include <cstdint>
#include <optional>
#include <string>

#include "fleetscope/sharer/safety.h"

namespace fleetscope::sharer {

// Salus holds back 300 MiB per GPU for its server process's context
// (SymbioticLab/Salus lanemgr.cpp, `availableMemory - 300 * 1024 * 1024`).
inline constexpr int64_t kDefaultContextBytes = 300 * kMiB;
inline constexpr const char* kDefaultHostConfig = "/etc/fleetscope/fleetscoped.conf";
// The host config key that holds the measured context size, a whole number of MiB.
inline constexpr const char* kContextConfigKey = "cuda_context_mib";
inline constexpr int64_t kMaxContextMib = 65536;

// How lanes divide a GPU. Only `budget` exists: a lane is a number of bytes its jobs may hold,
// the GPU's free memory is one number, and a lane grows into any free memory. fleetscope enforces
// lanes by counting each job's allocations in a ledger (the interposition library); it never
// decides where the driver puts them, so a contiguous [offset, offset + size) slice would only
// refuse jobs for fragmentation that the enforcement does not have. Salus keeps a budget too
// (its GpuControlBlock counts availableMemory).
enum class LaneShape { budget };

struct MemoryModel {
  SafetyMargin margin;
  int64_t context_bytes = kDefaultContextBytes;  // per job process, on its GPU, outside its lane
  LaneShape shape = LaneShape::budget;

  // The bytes a lane needs to hold `load` (sum P + max guarded T, rounded), and after admitting
  // `extra` as well.
  int64_t lane_bytes(const LaneLoad& load) const { return required_bytes(load, margin); }
  int64_t lane_bytes_with(const LaneLoad& load, const MemoryDemand& extra) const {
    return required_bytes_with(load, extra, margin);
  }
  // GPU memory one job takes when it has a lane of its own: its lane plus its context.
  int64_t own_lane_gpu_bytes(const MemoryDemand& demand) const {
    return lane_bytes_with(LaneLoad{}, demand) + context_bytes;
  }
  // GPU memory `jobs` processes take beyond their lanes.
  int64_t contexts_bytes(int64_t jobs) const { return jobs * context_bytes; }
  // Throws std::invalid_argument naming the bad field.
  void validate() const;
};

// The context size (bytes) a host config file states, nullopt when the file does not exist or
// does not name `cuda_context_mib`. Throws std::runtime_error naming the file, the line and the
// expected range for a bad value. Other keys are left to their owner (fleetscoped's parser).
std::optional<int64_t> context_bytes_from_config(const std::string& path);

// The host's memory model: defaults, with the context from `config_path` when it states one
// (empty: $FLEETSCOPE_CONFIG, else kDefaultHostConfig). `context_source` says where the context
// figure came from, for the output of `share plan` and the daemon's log: the file, or
// "default (Salus's 300 MiB reservation)".
struct HostMemoryModel {
  MemoryModel model;
  std::string context_source;
};
HostMemoryModel host_memory_model(const std::string& config_path = {});

}  // namespace fleetscope::sharer
