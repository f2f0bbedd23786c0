#pragma once
// One GPU's memory divided into lanes, by the memory model (memory_model.h). A lane is a byte
// budget with its own execution slot; its jobs take turns at iteration granularity while lanes run
// in parallel. Every admitted job also holds its CUDA context on the GPU, outside its lane. The GPU
// holds its lanes when  sum_lanes capacity + jobs * context <= GPU capacity; the rest is free.
//
// Re-partitioning rule (why no admitted job ever loses its guarantee): capacities only change
// (1) when a job leaves: the lane shrinks to the requirement of the jobs that remain, and the
// requirement is monotone in the job set (sum P and max guarded T only drop), so it is never below
// what the remaining jobs were admitted with; (2) when a lane grows into free memory to admit a
// job, which only adds memory. A lane never gives up memory its jobs need.

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fleetscope/sharer/memory_model.h"

namespace fleetscope::sharer {

struct LaneJob {
  int64_t job_id = 0;
  MemoryDemand demand;
};

struct Lane {
  int id = 0;
  // Where the lane's budget starts when the lanes are laid out end to end in id order (for
  // display: lanes are budgets, not address ranges; the offset moves when an earlier lane changes).
  int64_t offset_bytes = 0;
  int64_t capacity_bytes = 0;
  bool solo = false;  // reserved for one job (latency-sensitive jobs never wait behind others)
  LaneLoad load;
  std::vector<LaneJob> jobs;
};

struct AdmitOptions {
  bool allow_shared_lane = true;  // may join an existing lane (time-sharing it)
  bool allow_new_lane = true;     // false: only joining an existing lane will do
  bool solo = false;              // wants a lane of its own that nobody may join later
  int max_lanes = 1 << 30;        // 1 = "lanes off": one lane per GPU (it grows as jobs join)
  int64_t new_lane_bytes = 0;     // > 0: size a new lane to this instead of the job's requirement
};

struct Placement {
  int lane_id = -1;
  bool new_lane = false;
  int64_t leftover_bytes = 0;  // spare capacity the lane keeps after admission (best-fit score)
  int64_t added_bytes = 0;     // lane memory taken from the free budget (new lane, or growth)
};

class LaneAllocator {
 public:
  explicit LaneAllocator(int64_t capacity_bytes, MemoryModel model = {});

  // Where `demand` would go, without changing anything: a new lane when free memory holds it,
  // else best fit among existing lanes as they are, else the lane that needs the least growth.
  // Every way also needs the job's context in free memory.
  std::optional<Placement> probe(const MemoryDemand& demand,
                                 const AdmitOptions& options = {}) const;
  std::optional<Placement> admit(int64_t job_id, const MemoryDemand& demand,
                                 const AdmitOptions& options = {});
  // Admits a job into the lane `lane_id` that somebody else chose (the sharing service carrying
  // out a plan), growing the lane into free memory when the safety condition needs more. nullopt
  // when the lane is unknown or solo, or cannot hold the job even grown.
  std::optional<Placement> admit_into(int64_t job_id, const MemoryDemand& demand, int lane_id);
  // Removes a job; shrinks or frees its lane and returns its context. False if unknown.
  bool release(int64_t job_id);

  std::optional<int> lane_of(int64_t job_id) const;
  const Lane* find_lane(int lane_id) const;
  const std::vector<Lane>& lanes() const { return lanes_; }
  int64_t capacity_bytes() const { return capacity_; }
  // Memory held by no lane and no job's context.
  int64_t free_bytes() const { return free_; }
  // What a new job's lane (or a lane's growth to take it) may use of the free memory: the free
  // memory less the job's own context (the memory model's rule; the planner screens with it).
  int64_t room_for_new_job() const { return free_ - model_.context_bytes; }
  size_t job_count() const { return job_lane_.size(); }
  bool empty() const { return job_lane_.empty(); }
  const MemoryModel& model() const { return model_; }
  const SafetyMargin& margin() const { return model_.margin; }

  // Empty when all invariants hold; otherwise a description of the first violation: lanes,
  // contexts and free memory add up to the capacity, every lane holds its jobs safely, cached
  // aggregates match a recomputation, each job is in exactly one lane, offsets lay the lanes out
  // end to end in id order.
  std::string check_invariants() const;

 private:
  Lane* mutable_lane(int lane_id);
  void lay_out();  // recomputes the display offsets

  int64_t capacity_;
  MemoryModel model_;
  std::vector<Lane> lanes_;
  int64_t free_ = 0;
  std::unordered_map<int64_t, int> job_lane_;
  std::unordered_map<int, size_t> lane_index_;  // lane id -> position in lanes_
  int next_lane_id_ = 0;
};

}  // namespace fleetscope::sharer
