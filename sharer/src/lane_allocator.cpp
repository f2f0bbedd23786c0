#include "fleetscope/sharer/lane_allocator.h"

#include <algorithm>
#include <limits>

namespace fleetscope::sharer {

namespace {
constexpr int64_t kNoFit = std::numeric_limits<int64_t>::max();
}

LaneAllocator::LaneAllocator(int64_t capacity_bytes, MemoryModel model)
    : capacity_(capacity_bytes), model_(model), free_(std::max<int64_t>(0, capacity_bytes)) {}

std::optional<Placement> LaneAllocator::probe(const MemoryDemand& demand,
                                              const AdmitOptions& options) const {
  // Every way in costs the job's context on the GPU; what is left may go to its lane.
  const int64_t room = room_for_new_job();
  if (room < 0) return std::nullopt;
  const bool may_share = options.allow_shared_lane && !options.solo;
  const SafetyMargin& margin = model_.margin;
  // Salus's order (LaneMgr::GpuControlBlock::bestFitFor in SymbioticLab/Salus,
  // src/oplibraries/tensorflow/device/gpu/lane/lanemgr.cpp): open a new lane when free memory
  // holds the job, and only otherwise share an existing lane, the one with the least room left.
  // 1. A new lane sized to the job's requirement.
  const int64_t guarded = margin.guarded_ephemeral(demand);
  const int64_t own_need = required_bytes_for(demand.persistent_bytes, guarded, margin);
  const int64_t lane_size = options.new_lane_bytes > 0 ? options.new_lane_bytes : own_need;
  if (options.allow_new_lane && static_cast<int>(lanes_.size()) < options.max_lanes &&
      own_need <= lane_size && lane_size <= room) {
    return Placement{-1, true, lane_size - own_need, lane_size};
  }
  // 2. Best fit among existing lanes as they are: the one left with the least spare capacity.
  if (may_share) {
    int best_lane = -1;
    int64_t best_leftover = kNoFit;
    for (const auto& lane : lanes_) {
      if (lane.solo) continue;
      const int64_t need =
          required_bytes_for(lane.load.sum_persistent_bytes + demand.persistent_bytes,
                             std::max(lane.load.max_guarded_ephemeral_bytes, guarded), margin);
      if (need <= lane.capacity_bytes && lane.capacity_bytes - need < best_leftover) {
        best_leftover = lane.capacity_bytes - need;
        best_lane = lane.id;
      }
    }
    if (best_lane >= 0) return Placement{best_lane, false, best_leftover, 0};
  }
  // 3. Re-partition (fleetscope's extension; Salus leaves defragmentation as a TODO): grow a
  //    lane into free memory. Joining costs P + max(0, T - T_max) of the lane, never more than a
  //    lane of its own, so this admits jobs a new lane cannot.
  if (may_share && room > 0) {
    std::optional<Placement> best;
    for (const auto& lane : lanes_) {
      if (lane.solo) continue;
      const int64_t grow = model_.lane_bytes_with(lane.load, demand) - lane.capacity_bytes;
      if (grow <= 0 || grow > room) continue;
      if (!best || grow < best->added_bytes) best = Placement{lane.id, false, 0, grow};
    }
    if (best) return best;
  }
  return std::nullopt;
}

std::optional<Placement> LaneAllocator::admit(int64_t job_id, const MemoryDemand& demand,
                                              const AdmitOptions& options) {
  if (job_lane_.count(job_id)) return std::nullopt;
  auto placement = probe(demand, options);
  if (!placement) return std::nullopt;
  if (placement->new_lane) {
    Lane lane;
    lane.id = next_lane_id_++;
    lane.solo = options.solo;
    lane_index_[lane.id] = lanes_.size();
    lanes_.push_back(std::move(lane));  // ids only grow: lanes_ stays in id order
    placement->lane_id = lanes_.back().id;
  }
  Lane* lane = mutable_lane(placement->lane_id);
  lane->capacity_bytes += placement->added_bytes;
  free_ -= placement->added_bytes + model_.context_bytes;
  lane->load.add(demand, model_.margin);
  lane->jobs.push_back(LaneJob{job_id, demand});
  job_lane_[job_id] = lane->id;
  lay_out();
  return placement;
}

std::optional<Placement> LaneAllocator::admit_into(int64_t job_id, const MemoryDemand& demand,
                                                   int lane_id) {
  if (job_lane_.count(job_id)) return std::nullopt;
  Lane* lane = mutable_lane(lane_id);
  if (!lane || lane->solo) return std::nullopt;
  const int64_t room = room_for_new_job();
  const int64_t need = model_.lane_bytes_with(lane->load, demand);
  const int64_t grow_by = std::max<int64_t>(0, need - lane->capacity_bytes);
  if (room < 0 || grow_by > room) return std::nullopt;
  lane->capacity_bytes += grow_by;
  free_ -= grow_by + model_.context_bytes;
  lane->load.add(demand, model_.margin);
  lane->jobs.push_back(LaneJob{job_id, demand});
  job_lane_[job_id] = lane->id;
  lay_out();
  return Placement{lane->id, false, lane->capacity_bytes - need, grow_by};
}

bool LaneAllocator::release(int64_t job_id) {
  auto found = job_lane_.find(job_id);
  if (found == job_lane_.end()) return false;
  const int lane_id = found->second;
  job_lane_.erase(found);
  free_ += model_.context_bytes;
  const size_t index = lane_index_.at(lane_id);
  Lane& lane = lanes_[index];
  std::erase_if(lane.jobs, [&](const LaneJob& job) { return job.job_id == job_id; });
  if (lane.jobs.empty()) {
    free_ += lane.capacity_bytes;
    lanes_.erase(lanes_.begin() + static_cast<std::ptrdiff_t>(index));
    lane_index_.erase(lane_id);
    for (size_t i = index; i < lanes_.size(); ++i) lane_index_[lanes_[i].id] = i;
  } else {
    // Recompute (not subtract) so the max guarded T stays exact.
    lane.load = LaneLoad{};
    for (const auto& job : lane.jobs) lane.load.add(job.demand, model_.margin);
    const int64_t need = model_.lane_bytes(lane.load);
    if (need < lane.capacity_bytes) {
      free_ += lane.capacity_bytes - need;
      lane.capacity_bytes = need;
    }
  }
  lay_out();
  return true;
}

void LaneAllocator::lay_out() {
  int64_t offset = 0;
  for (auto& lane : lanes_) {
    lane.offset_bytes = offset;
    offset += lane.capacity_bytes;
  }
}

std::optional<int> LaneAllocator::lane_of(int64_t job_id) const {
  auto found = job_lane_.find(job_id);
  if (found == job_lane_.end()) return std::nullopt;
  return found->second;
}

const Lane* LaneAllocator::find_lane(int lane_id) const {
  auto found = lane_index_.find(lane_id);
  return found == lane_index_.end() ? nullptr : &lanes_[found->second];
}

Lane* LaneAllocator::mutable_lane(int lane_id) {
  return const_cast<Lane*>(static_cast<const LaneAllocator*>(this)->find_lane(lane_id));
}

std::string LaneAllocator::check_invariants() const {
  if (free_ < 0) return "free memory is negative";
  int64_t held = free_ + model_.contexts_bytes(static_cast<int64_t>(job_lane_.size()));
  int64_t offset = 0;
  int previous_id = -1;
  size_t jobs = 0;
  for (const auto& lane : lanes_) {
    if (lane.capacity_bytes <= 0) return "lane " + std::to_string(lane.id) + " has no memory";
    if (lane.id <= previous_id) return "lanes are not in id order";
    previous_id = lane.id;
    if (lane.offset_bytes != offset) return "lane " + std::to_string(lane.id) + " is misplaced";
    offset += lane.capacity_bytes;
    held += lane.capacity_bytes;
    if (lane.jobs.empty()) return "an empty lane was not freed";
    std::vector<MemoryDemand> demands;
    LaneLoad recomputed;
    for (const auto& job : lane.jobs) {
      demands.push_back(job.demand);
      recomputed.add(job.demand, model_.margin);
      auto owner = job_lane_.find(job.job_id);
      if (owner == job_lane_.end() || owner->second != lane.id) {
        return "job " + std::to_string(job.job_id) + " is not indexed to its lane";
      }
    }
    jobs += lane.jobs.size();
    if (!satisfies_safety(demands, lane.capacity_bytes, model_.margin)) {
      return "lane " + std::to_string(lane.id) + " violates the safety condition";
    }
    if (recomputed.sum_persistent_bytes != lane.load.sum_persistent_bytes ||
        recomputed.max_ephemeral_bytes != lane.load.max_ephemeral_bytes ||
        recomputed.max_guarded_ephemeral_bytes != lane.load.max_guarded_ephemeral_bytes ||
        recomputed.jobs != lane.load.jobs) {
      return "lane " + std::to_string(lane.id) + " has stale aggregates";
    }
  }
  if (held != std::max<int64_t>(0, capacity_))
    return "lanes, contexts and free memory do not add up to the GPU capacity";
  if (jobs != job_lane_.size()) return "job index and lanes disagree";
  if (lane_index_.size() != lanes_.size()) return "lane index and lanes disagree";
  for (size_t i = 0; i < lanes_.size(); ++i) {
    auto found = lane_index_.find(lanes_[i].id);
    if (found == lane_index_.end() || found->second != i) return "lane index is stale";
  }
  return {};
}

}  // namespace fleetscope::sharer
