#include "fleetscope/lanes/gate_arbiter.h"

#include <algorithm>
#include <chrono>

namespace fleetscope::lanes {

namespace {
constexpr size_t kMaxEvents = 10000;
}

std::string_view gate_event_name(GateEventKind kind) {
  switch (kind) {
    case GateEventKind::kJoined:
      return "joined";
    case GateEventKind::kWaiting:
      return "waiting";
    case GateEventKind::kGranted:
      return "granted";
    case GateEventKind::kReleased:
      return "released";
    case GateEventKind::kLeft:
      return "left";
  }
  return "unknown";
}

GateArbiter::GateArbiter(std::string_view default_policy) : default_policy_(default_policy) {
  if (!make_turn_policy(default_policy_)) default_policy_ = "fifo";
}

GateArbiter::Lane& GateArbiter::lane_locked(const std::string& lane_id) {
  Lane& lane = lanes_[lane_id];
  if (!lane.policy) lane.policy = make_turn_policy(default_policy_);
  return lane;
}

bool GateArbiter::set_lane_policy(const std::string& lane_id, std::string_view policy) {
  auto made = make_turn_policy(policy);
  if (!made) return false;
  std::lock_guard lock(mutex_);
  lane_locked(lane_id).policy = std::move(made);
  return true;
}

void GateArbiter::record_locked(const std::string& lane_id, uint64_t member_id,
                                GateEventKind kind) {
  GateEvent event;
  event.sequence = next_event_++;
  event.lane_id = lane_id;
  event.member_id = member_id;
  auto member = members_.find(member_id);
  event.pid = member != members_.end() ? member->second.pid : 0;
  event.kind = kind;
  event.monotonic_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count();
  events_.push_back(std::move(event));
  if (events_.size() > kMaxEvents) events_.pop_front();
}

uint64_t GateArbiter::join(const std::string& lane_id, pid_t pid, int priority) {
  std::lock_guard lock(mutex_);
  uint64_t id = next_member_id_++;
  members_[id] = Member{lane_id, pid, priority};
  lane_locked(lane_id);
  record_locked(lane_id, id, GateEventKind::kJoined);
  return id;
}

void GateArbiter::give_back_locked(uint64_t member_id, Lane& lane) {
  if (lane.holder == member_id) lane.holder.reset();
  std::erase_if(lane.waiting, [&](const TurnCandidate& c) { return c.member_id == member_id; });
}

std::vector<uint64_t> GateArbiter::grant_locked(const std::string& lane_id, Lane& lane) {
  if (lane.holder || lane.waiting.empty()) return {};
  size_t chosen = lane.policy->pick(lane.waiting);
  uint64_t member_id = lane.waiting[chosen].member_id;
  lane.waiting.erase(lane.waiting.begin() + static_cast<std::ptrdiff_t>(chosen));
  lane.holder = member_id;
  record_locked(lane_id, member_id, GateEventKind::kGranted);
  return {member_id};
}

std::vector<uint64_t> GateArbiter::request_turn(uint64_t member_id, uint64_t remaining_ns) {
  std::lock_guard lock(mutex_);
  auto member = members_.find(member_id);
  if (member == members_.end()) return {};
  Lane& lane = lane_locked(member->second.lane_id);
  give_back_locked(member_id, lane);
  TurnCandidate candidate;
  candidate.member_id = member_id;
  candidate.arrival = next_arrival_++;
  candidate.priority = member->second.priority;
  candidate.remaining_ns = remaining_ns;
  lane.waiting.push_back(candidate);
  record_locked(member->second.lane_id, member_id, GateEventKind::kWaiting);
  return grant_locked(member->second.lane_id, lane);
}

std::vector<uint64_t> GateArbiter::release(uint64_t member_id) {
  std::lock_guard lock(mutex_);
  auto member = members_.find(member_id);
  if (member == members_.end()) return {};
  Lane& lane = lane_locked(member->second.lane_id);
  give_back_locked(member_id, lane);
  record_locked(member->second.lane_id, member_id, GateEventKind::kReleased);
  return grant_locked(member->second.lane_id, lane);
}

std::vector<uint64_t> GateArbiter::leave(uint64_t member_id) {
  std::lock_guard lock(mutex_);
  auto member = members_.find(member_id);
  if (member == members_.end()) return {};
  std::string lane_id = member->second.lane_id;
  Lane& lane = lane_locked(lane_id);
  give_back_locked(member_id, lane);
  record_locked(lane_id, member_id, GateEventKind::kLeft);
  members_.erase(member);
  return grant_locked(lane_id, lane);
}

std::optional<uint64_t> GateArbiter::holder(const std::string& lane_id) const {
  std::lock_guard lock(mutex_);
  auto lane = lanes_.find(lane_id);
  if (lane == lanes_.end()) return std::nullopt;
  return lane->second.holder;
}

size_t GateArbiter::waiting(const std::string& lane_id) const {
  std::lock_guard lock(mutex_);
  auto lane = lanes_.find(lane_id);
  return lane == lanes_.end() ? 0 : lane->second.waiting.size();
}

std::optional<pid_t> GateArbiter::member_pid(uint64_t member_id) const {
  std::lock_guard lock(mutex_);
  auto member = members_.find(member_id);
  if (member == members_.end()) return std::nullopt;
  return member->second.pid;
}

std::vector<GateEvent> GateArbiter::events() const {
  std::lock_guard lock(mutex_);
  return {events_.begin(), events_.end()};
}

std::vector<GateEvent> GateArbiter::events_since(uint64_t sequence) const {
  std::lock_guard lock(mutex_);
  auto first = std::partition_point(events_.begin(), events_.end(),
                                    [&](const GateEvent& e) { return e.sequence <= sequence; });
  return {first, events_.end()};
}

}  // namespace fleetscope::lanes
