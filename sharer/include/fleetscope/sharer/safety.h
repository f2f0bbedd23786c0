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

// The margin is statistical, not a fixed fudge factor: a job's per-iteration peak varies between
// iterations with a measured standard deviation sigma. Only one job of a lane is inside an
// iteration at any moment, so only one ephemeral peak is live: the lane needs
//   sum_i P_i + max_k (T_k + z * sigma_k)
// (the variation is in the ephemeral part; P is held for the job's life). z = 3 bounds the chance
// that the live job exceeds its guarded peak by about 0.13% under a normal approximation.
struct SafetyMargin {
  double z = 3.0;
  // Prior sigma relative to P + T for jobs without a measurement (documented in docs/sharer.md).
  double default_relative_stddev = 0.02;
  // CUDA's allocation granularity: lane capacities are multiples of it.
  int64_t granularity_bytes = 2 * kMiB;

  double stddev_of(const MemoryDemand& demand) const;
  double variance_of(const MemoryDemand& demand) const {
    const double sigma = stddev_of(demand);
    return sigma * sigma;
  }
  // T + ceil(z * sigma): the ephemeral peak with its margin, the part that is live for one job.
  int64_t guarded_ephemeral(const MemoryDemand& demand) const;
  // Inline: it runs once per lane in every admission decision.
  int64_t round_up(int64_t bytes) const {
    if (granularity_bytes <= 1) return bytes;
    if ((granularity_bytes & (granularity_bytes - 1)) == 0) {  // power of two: no division
      return (bytes + granularity_bytes - 1) & ~(granularity_bytes - 1);
    }
    return (bytes + granularity_bytes - 1) / granularity_bytes * granularity_bytes;
  }
};

// sum P + max guarded T, rounded to the allocation granularity. Inline for the admission hot loop.
inline int64_t required_bytes_for(int64_t sum_persistent, int64_t max_guarded_ephemeral,
                                  const SafetyMargin& margin) {
  return margin.round_up(sum_persistent + max_guarded_ephemeral);
}

// Running aggregates of a lane's jobs, so that an admission check is O(1).
struct LaneLoad {
  int64_t sum_persistent_bytes = 0;
  int64_t max_ephemeral_bytes = 0;          // max T (no margin)
  int64_t max_guarded_ephemeral_bytes = 0;  // max (T + z sigma)
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
