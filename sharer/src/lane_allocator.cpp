#include "fleetscope/sharer/lane_allocator.h"

#include <algorithm>
#include <limits>
#include <sstream>

namespace fleetscope::sharer {

namespace {
constexpr int64_t kNoFit = std::numeric_limits<int64_t>::max();
}

LaneAllocator::LaneAllocator(int64_t capacity_bytes, SafetyMargin margin)
    : capacity_(capacity_bytes), margin_(margin) {
  if (capacity_ > 0) free_.emplace(0, capacity_);
}

int64_t LaneAllocator::adjacent_free(const Lane& lane) const {
  int64_t room = 0;
  auto after = free_.find(lane.offset_bytes + lane.capacity_bytes);
  if (after != free_.end()) room += after->second;
  auto before = free_.lower_bound(lane.offset_bytes);
  if (before != free_.begin()) {
    --before;
    if (before->first + before->second == lane.offset_bytes) room += before->second;
  }
  return room;
}

std::optional<Placement> LaneAllocator::probe(const MemoryDemand& demand,
                                              const AdmitOptions& options) const {
  const bool may_share = options.allow_shared_lane && !options.solo;
  // Salus's order (LaneMgr::GpuControlBlock::bestFitFor in SymbioticLab/Salus,
  // src/oplibraries/tensorflow/device/gpu/lane/lanemgr.cpp): open a new lane when free memory
  // holds the job, and only otherwise share an existing lane, the one with the least room left.
  // 1. A new lane in the smallest free segment that holds it.
  const int64_t guarded = margin_.guarded_ephemeral(demand);
  const int64_t own_need = required_bytes_for(demand.persistent_bytes, guarded, margin_);
  const int64_t lane_size = options.new_lane_bytes > 0 ? options.new_lane_bytes : own_need;
  if (options.allow_new_lane && static_cast<int>(lanes_.size()) < options.max_lanes &&
      own_need <= lane_size) {
    int64_t best_size = kNoFit;
    for (const auto& [offset, size] : free_) {
      if (size >= lane_size && size < best_size) best_size = size;
    }
    if (best_size != kNoFit) return Placement{-1, true, lane_size - own_need, lane_size};
  }
  // 2. Best fit among existing lanes as they are: the one left with the least spare capacity.
  if (may_share) {
    int best_lane = -1;
    int64_t best_leftover = kNoFit;
    for (const auto& lane : lanes_) {
      if (lane.solo) continue;
      const int64_t need =
          required_bytes_for(lane.load.sum_persistent_bytes + demand.persistent_bytes,
                             std::max(lane.load.max_guarded_ephemeral_bytes, guarded), margin_);
      if (need <= lane.capacity_bytes && lane.capacity_bytes - need < best_leftover) {
        best_leftover = lane.capacity_bytes - need;
        best_lane = lane.id;
      }
    }
    if (best_lane >= 0) return Placement{best_lane, false, best_leftover, 0};
  }
  // 3. Re-partition (fleetscope's extension; Salus leaves defragmentation as a TODO): grow a
  //    lane into free space next to it. Joining costs P + max(0, T - T_max) of the lane, never
  //    more than a lane of its own, so this admits jobs a new lane cannot.
  if (may_share && !free_.empty()) {
    std::optional<Placement> best;
    for (const auto& lane : lanes_) {
      if (lane.solo) continue;
      const int64_t grow = required_bytes_with(lane.load, demand, margin_) - lane.capacity_bytes;
      if (grow <= 0 || grow > adjacent_free(lane)) continue;
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
    const int64_t lane_size = placement->added_bytes;
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second >= lane_size && (best == free_.end() || it->second < best->second)) best = it;
    }
    Lane lane;
    lane.id = next_lane_id_++;
    lane.offset_bytes = best->first;
    lane.capacity_bytes = lane_size;
    lane.solo = options.solo;
    take(best, best->first, lane_size);
    lane_index_[lane.id] = lanes_.size();
    lanes_.push_back(std::move(lane));
    placement->lane_id = lanes_.back().id;
  }
  Lane* lane = mutable_lane(placement->lane_id);
  if (!placement->new_lane && placement->added_bytes > 0) grow(*lane, placement->added_bytes);
  lane->load.add(demand, margin_);
  lane->jobs.push_back(LaneJob{job_id, demand});
  job_lane_[job_id] = lane->id;
  return placement;
}

std::optional<Placement> LaneAllocator::admit_into(int64_t job_id, const MemoryDemand& demand,
                                                   int lane_id) {
  if (job_lane_.count(job_id)) return std::nullopt;
  Lane* lane = mutable_lane(lane_id);
  if (!lane || lane->solo) return std::nullopt;
  const int64_t need = required_bytes_with(lane->load, demand, margin_);
  const int64_t grow_by = std::max<int64_t>(0, need - lane->capacity_bytes);
  if (grow_by > adjacent_free(*lane)) return std::nullopt;
  if (grow_by > 0) grow(*lane, grow_by);
  lane->load.add(demand, margin_);
  lane->jobs.push_back(LaneJob{job_id, demand});
  job_lane_[job_id] = lane->id;
  return Placement{lane->id, false, lane->capacity_bytes - need, grow_by};
}

void LaneAllocator::grow(Lane& lane, int64_t bytes) {
  // Take from the free segment after the lane first, then extend the lane downwards.
  auto after = free_.find(lane.offset_bytes + lane.capacity_bytes);
  if (after != free_.end()) {
    const int64_t taken = std::min(bytes, after->second);
    take(after, after->first, taken);
    lane.capacity_bytes += taken;
    bytes -= taken;
  }
  if (bytes > 0) {
    auto before = std::prev(free_.lower_bound(lane.offset_bytes));
    before->second -= bytes;
    if (before->second == 0) free_.erase(before);
    lane.offset_bytes -= bytes;
    lane.capacity_bytes += bytes;
  }
}

bool LaneAllocator::release(int64_t job_id) {
  auto found = job_lane_.find(job_id);
  if (found == job_lane_.end()) return false;
  const int lane_id = found->second;
  job_lane_.erase(found);
  auto lane_it = lanes_.begin() + static_cast<std::ptrdiff_t>(lane_index_.at(lane_id));
  Lane& lane = *lane_it;
  std::erase_if(lane.jobs, [&](const LaneJob& job) { return job.job_id == job_id; });
  if (lane.jobs.empty()) {
    give_back(lane.offset_bytes, lane.capacity_bytes);
    // Swap with the last lane and pop, keeping the id -> index map exact.
    const size_t index = lane_index_.at(lane_id);
    lane_index_.erase(lane_id);
    if (index + 1 != lanes_.size()) {
      lanes_[index] = std::move(lanes_.back());
      lane_index_[lanes_[index].id] = index;
    }
    lanes_.pop_back();
    return true;
  }
  // Recompute (not subtract) so the max T and the variance sum stay exact.
  lane.load = LaneLoad{};
  for (const auto& job : lane.jobs) lane.load.add(job.demand, margin_);
  const int64_t need = required_bytes(lane.load, margin_);
  if (need < lane.capacity_bytes) {
    give_back(lane.offset_bytes + need, lane.capacity_bytes - need);
    lane.capacity_bytes = need;
  }
  return true;
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

int64_t LaneAllocator::free_bytes() const {
  int64_t total = 0;
  for (const auto& [offset, size] : free_) total += size;
  return total;
}

void LaneAllocator::take(std::map<int64_t, int64_t>::iterator segment, int64_t offset,
                         int64_t size) {
  // Callers only take from the start of a segment.
  const int64_t remaining = segment->second - size;
  free_.erase(segment);
  if (remaining > 0) free_.emplace(offset + size, remaining);
}

void LaneAllocator::give_back(int64_t offset, int64_t size) {
  if (size <= 0) return;
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == offset + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == offset) {
      previous->second += size;
      return;
    }
  }
  free_.emplace(offset, size);
}

std::string LaneAllocator::check_invariants() const {
  std::ostringstream problem;
  std::vector<std::pair<int64_t, int64_t>> pieces;
  for (const auto& [offset, size] : free_) pieces.emplace_back(offset, size);
  for (const auto& lane : lanes_) pieces.emplace_back(lane.offset_bytes, lane.capacity_bytes);
  std::sort(pieces.begin(), pieces.end());
  int64_t cursor = 0;
  for (const auto& [offset, size] : pieces) {
    if (offset != cursor) {
      problem << "memory at offset " << cursor << " is " << (offset < cursor ? "double" : "un")
              << "-counted";
      return problem.str();
    }
    if (size <= 0) return "a lane or free segment has non-positive size";
    cursor += size;
  }
  if (cursor != capacity_) return "lanes and free segments do not add up to the GPU capacity";
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    auto next = std::next(it);
    if (next != free_.end() && it->first + it->second == next->first) {
      return "adjacent free segments were not coalesced";
    }
  }
  size_t jobs = 0;
  for (const auto& lane : lanes_) {
    if (lane.jobs.empty()) return "an empty lane was not freed";
    std::vector<MemoryDemand> demands;
    LaneLoad recomputed;
    for (const auto& job : lane.jobs) {
      demands.push_back(job.demand);
      recomputed.add(job.demand, margin_);
      auto owner = job_lane_.find(job.job_id);
      if (owner == job_lane_.end() || owner->second != lane.id) {
        return "job " + std::to_string(job.job_id) + " is not indexed to its lane";
      }
    }
    jobs += lane.jobs.size();
    if (!satisfies_safety(demands, lane.capacity_bytes, margin_)) {
      return "lane " + std::to_string(lane.id) + " violates the safety condition";
    }
    if (recomputed.sum_persistent_bytes != lane.load.sum_persistent_bytes ||
        recomputed.max_ephemeral_bytes != lane.load.max_ephemeral_bytes ||
        recomputed.jobs != lane.load.jobs) {
      return "lane " + std::to_string(lane.id) + " has stale aggregates";
    }
  }
  if (jobs != job_lane_.size()) return "job index and lanes disagree";
  if (lane_index_.size() != lanes_.size()) return "lane index and lanes disagree";
  for (size_t i = 0; i < lanes_.size(); ++i) {
    auto found = lane_index_.find(lanes_[i].id);
    if (found == lane_index_.end() || found->second != i) return "lane index is stale";
  }
  return {};
}

}  // namespace fleetscope::sharer
