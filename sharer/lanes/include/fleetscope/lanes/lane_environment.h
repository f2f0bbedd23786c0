#pragma once
// What a job in a lane is told at launch, through environment variables only (the job itself is
// not modified). The launcher (`fleetscope run --share`) or the daemon sets them; the
// interposition library reads them. Two mechanisms:
//  - interposition (default): LD_PRELOAD=libfleetscope_lanes.so plus the FLEETSCOPE_LANE_* and
//    FLEETSCOPE_GATE_* variables below;
//  - MPS (when an MPS control daemon serves the GPU): the client limits CUDA_MPS_* instead.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fleetscope::lanes {

using Environment = std::vector<std::pair<std::string, std::string>>;

// Variable names (the documentation in docs/sharer.md lists them with their defaults).
inline constexpr const char* kLaneIdVariable = "FLEETSCOPE_LANE_ID";          // lane identity
inline constexpr const char* kLaneBytesVariable = "FLEETSCOPE_LANE_BYTES";    // memory cap
inline constexpr const char* kLaneDirectoryVariable = "FLEETSCOPE_LANE_DIR";  // ledger folder
inline constexpr const char* kLaneGpuUuidVariable = "FLEETSCOPE_LANE_GPU_UUID";
inline constexpr const char* kGateSocketVariable = "FLEETSCOPE_GATE_SOCKET";  // arbiter socket
inline constexpr const char* kJobPriorityVariable = "FLEETSCOPE_JOB_PRIORITY";
inline constexpr const char* kJobStepsVariable = "FLEETSCOPE_JOB_STEPS";  // total iterations
inline constexpr const char* kLanesLogVariable = "FLEETSCOPE_LANES_LOG";  // 1: diagnostics
// The daemon's grant of the lane (LaneGrant.lane_token): joining a lane the daemon made needs it.
inline constexpr const char* kLaneTokenVariable = "FLEETSCOPE_LANE_TOKEN";

struct LaneAssignment {
  std::string lane_id;
  uint64_t lane_bytes = 0;       // 0: no memory cap (gate only)
  std::string ledger_directory;  // empty: /dev/shm
  std::string gpu_uuid;          // empty: NVML answers for every device are rewritten
  std::string gate_socket;       // empty: no iteration gate
  int priority = 0;              // PRIORITY policy: higher goes first
  uint64_t total_steps = 0;      // SRTF's remaining-time estimate; 0: unknown
  std::string token;             // the daemon's grant token; empty: a lane without a daemon
};

// Parses "123", "64MiB", "1.5GiB", "2G" (binary units: K/M/G/T with or without "iB"). Empty
// optional on anything else.
std::optional<uint64_t> parse_byte_size(const std::string& text);

// The variables for an interposed job. `library` is the path of libfleetscope_lanes.so; it goes
// in front of any LD_PRELOAD the job already has (`existing_preload`).
Environment interposition_environment(const LaneAssignment& assignment, const std::string& library,
                                      const std::string& existing_preload);

// The assignment a process was started with (reads getenv). nullopt when FLEETSCOPE_LANE_ID is
// unset; `error` names the variable and the value when one is malformed.
std::optional<LaneAssignment> assignment_from_environment(std::string* error);

// MPS client limits for one lane: the device's pinned-memory cap and a share of its SMs.
struct MpsClientLimits {
  int device_ordinal = 0;              // as the client enumerates devices
  uint64_t pinned_memory_bytes = 0;    // 0: no memory limit
  int active_thread_percentage = 100;  // 1..100
  std::string pipe_directory;          // empty: the MPS default (/tmp/nvidia-mps)
};

// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT ("ORDINAL=NM", rounded down to whole MiB so the cap never
// exceeds the lane), CUDA_MPS_ACTIVE_THREAD_PERCENTAGE and CUDA_MPS_PIPE_DIRECTORY. Empty with
// `error` set for an out-of-range percentage or a cap under 1 MiB.
Environment mps_client_environment(const MpsClientLimits& limits, std::string* error);

}  // namespace fleetscope::lanes
