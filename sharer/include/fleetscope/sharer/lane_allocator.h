#pragma once
// One GPU's memory divided into lanes. A lane is a contiguous slice [offset, offset + capacity)
// with its own execution slot; its jobs take turns at iteration granularity while lanes run in
// parallel. Memory not held by a lane is kept in a coalesced free list.
//
// Re-partitioning rule (why no admitted job ever loses its guarantee): capacities only change
// (1) when a job leaves: the lane shrinks to the requirement of the jobs that remain, and the
// requirement is monotone in the job set (sum P, max T and the variance sum only drop), so it is
// never below what the remaining jobs were admitted with; (2) when a lane grows into free space
// adjacent to it to admit a job, which only adds memory. A lane never gives up memory its jobs
// need and never overlaps another lane.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fleetscope/sharer/safety.h"

namespace fleetscope::sharer {

struct LaneJob {
  int64_t job_id = 0;
  MemoryDemand demand;
};

struct Lane {
  int id = 0;
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
  int max_lanes = 1 << 30;        // 1 = "lanes off": the whole GPU is a single lane
  int64_t new_lane_bytes = 0;     // > 0: size a new lane to this instead of the job's requirement
};

struct Placement {
  int lane_id = -1;
  bool new_lane = false;
  int64_t leftover_bytes = 0;  // spare capacity the lane keeps after admission (best-fit score)
  int64_t added_bytes = 0;     // memory taken from the free list (new lane size, or lane growth)
};

class LaneAllocator {
 public:
  explicit LaneAllocator(int64_t capacity_bytes, SafetyMargin margin = {});

  // Where `demand` would go, without changing anything: best fit among existing lanes as they are,
  // else a new lane in the best-fitting free segment, else the lane that needs the least growth
  // into free space adjacent to it.
  std::optional<Placement> probe(const MemoryDemand& demand,
                                 const AdmitOptions& options = {}) const;
  std::optional<Placement> admit(int64_t job_id, const MemoryDemand& demand,
                                 const AdmitOptions& options = {});
  // Admits a job into the lane `lane_id` that somebody else chose (the sharing service carrying
  // out a plan), growing the lane into free memory adjacent to it when the safety condition needs
  // more. nullopt when the lane is unknown or solo, or cannot hold the job even grown.
  std::optional<Placement> admit_into(int64_t job_id, const MemoryDemand& demand, int lane_id);
  // Removes a job; shrinks or frees its lane and coalesces free space. False if unknown.
  bool release(int64_t job_id);

  std::optional<int> lane_of(int64_t job_id) const;
  const Lane* find_lane(int lane_id) const;
  const std::vector<Lane>& lanes() const { return lanes_; }
  const std::map<int64_t, int64_t>& free_segments() const { return free_; }
  int64_t capacity_bytes() const { return capacity_; }
  int64_t free_bytes() const;
  size_t job_count() const { return job_lane_.size(); }
  bool empty() const { return job_lane_.empty(); }
  const SafetyMargin& margin() const { return margin_; }

  // Empty when all invariants hold; otherwise a description of the first violation: lanes and
  // free segments tile [0, capacity) exactly once, free segments are coalesced, every lane holds
  // its jobs safely, cached aggregates match a recomputation, each job is in exactly one lane.
  std::string check_invariants() const;

 private:
  Lane* mutable_lane(int lane_id);
  int64_t adjacent_free(const Lane& lane) const;
  void grow(Lane& lane, int64_t bytes);
  void give_back(int64_t offset, int64_t size);  // returns memory to the free list, coalescing
  void take(std::map<int64_t, int64_t>::iterator segment, int64_t offset, int64_t size);

  int64_t capacity_;
  SafetyMargin margin_;
  std::vector<Lane> lanes_;
  std::map<int64_t, int64_t> free_;  // offset -> size
  std::unordered_map<int64_t, int> job_lane_;
  std::unordered_map<int, size_t> lane_index_;  // lane id -> position in lanes_
  int next_lane_id_ = 0;
};

}  // namespace fleetscope::sharer
