#pragma once
// The admission safety condition of a memory lane: sum_i P_i + max_i T_i + margin <= C_lane.
// P is a job's persistent memory (weights, optimizer state: held for the job's whole life), T its
// ephemeral peak within one iteration (activations, workspace: freed at the iteration boundary).
// Jobs in one lane run one iteration at a time, so only one T is live at once.

#include <cmath>
#include <cstdint>
#include <vector>

namespace fleetscope::sharer {

inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kGiB = int64_t{1} << 30;

struct MemoryDemand {
  int64_t persistent_bytes = 0;      // P
  int64_t ephemeral_peak_bytes = 0;  // T
  // Measured standard deviation of the job's per-iteration peak (P + T) across iterations;
  // negative when nothing was measured, in which case SafetyMargin's prior is used.
  double peak_stddev_bytes = -1.0;
};

// The margin is statistical, not a fixed fudge factor: each job's peak varies between
// iterations with a measured standard deviation sigma_i; peaks of independent jobs add in
// variance, so the lane keeps z * sqrt(sum_i sigma_i^2) spare. z = 3 bounds the chance that one
// admission check is exceeded by about 0.13% under a normal approximation.
struct SafetyMargin {
  double z = 3.0;
  // Prior sigma relative to P + T for jobs without a measurement (documented in docs/sharer.md).
  double default_relative_stddev = 0.02;
  // CUDA's allocation granularity: lane capacities are multiples of it.
  int64_t granularity_bytes = 2 * kMiB;

  double variance_of(const MemoryDemand& demand) const;
  // Inline: it runs once per lane in every admission decision.
  int64_t round_up(int64_t bytes) const {
    if (granularity_bytes <= 1) return bytes;
    if ((granularity_bytes & (granularity_bytes - 1)) == 0) {  // power of two: no division
      return (bytes + granularity_bytes - 1) & ~(granularity_bytes - 1);
    }
    return (bytes + granularity_bytes - 1) / granularity_bytes * granularity_bytes;
  }
};

// sum P + max T + z * sqrt(variance), rounded to the allocation granularity. Inline for the
// admission hot loop; everything else goes through the functions below.
inline int64_t required_bytes_for(int64_t sum_persistent, int64_t max_ephemeral, double variance,
                                  const SafetyMargin& margin) {
  const auto spare = static_cast<int64_t>(std::ceil(margin.z * std::sqrt(variance)));
  return margin.round_up(sum_persistent + max_ephemeral + spare);
}

// Running aggregates of a lane's jobs, so that an admission check is O(1).
struct LaneLoad {
  int64_t sum_persistent_bytes = 0;
  int64_t max_ephemeral_bytes = 0;
  double sum_variance = 0.0;
  int jobs = 0;

  void add(const MemoryDemand& demand, const SafetyMargin& margin);
};

// Bytes a lane needs to hold `load` safely (rounded to the allocation granularity).
int64_t required_bytes(const LaneLoad& load, const SafetyMargin& margin);
// Bytes a lane would need after also admitting `extra`.
int64_t required_bytes_with(const LaneLoad& load, const MemoryDemand& extra,
                            const SafetyMargin& margin);
// The safety condition recomputed from scratch (the reference the fast path is tested against).
bool satisfies_safety(const std::vector<MemoryDemand>& jobs, int64_t lane_capacity_bytes,
                      const SafetyMargin& margin);

}  // namespace fleetscope::sharer
