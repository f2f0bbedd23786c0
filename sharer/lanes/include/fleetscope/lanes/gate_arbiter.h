#pragma once
// The iteration gate's arbiter: for each lane, who holds the turn and who waits, and which
// waiting member goes next (the lane's TurnPolicy). A plain state machine with no I/O: the socket
// transport (GateServer) feeds it and sends GO to the members it returns; the daemon will host
// both and record the events in `sharing_events`. Thread-safe (one internal mutex).

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetscope/lanes/turn_policy.h"

namespace fleetscope::lanes {

enum class GateEventKind { kJoined, kWaiting, kGranted, kReleased, kLeft };

struct GateEvent {
  uint64_t sequence = 0;
  std::string lane_id;
  uint64_t member_id = 0;
  pid_t pid = 0;
  GateEventKind kind = GateEventKind::kJoined;
  // CLOCK_MONOTONIC when it happened: a member's kWaiting events are its step boundaries, so
  // their spacing is its iteration time in the lane (the daemon's slowdown measurement).
  int64_t monotonic_ns = 0;
};

std::string_view gate_event_name(GateEventKind kind);

class GateArbiter {
 public:
  // `default_policy`: "fifo", "srtf" or "priority" (unknown names fall back to fifo).
  explicit GateArbiter(std::string_view default_policy = "fifo");

  // Sets the policy of one lane; false for an unknown name.
  bool set_lane_policy(const std::string& lane_id, std::string_view policy);

  uint64_t join(const std::string& lane_id, pid_t pid, int priority);
  // The member reached a boundary: it gives back the turn if it held it and queues. Returns the
  // members that now hold the turn and must be told GO (zero or one).
  std::vector<uint64_t> request_turn(uint64_t member_id, uint64_t remaining_ns);
  // Gives the turn back without queueing.
  std::vector<uint64_t> release(uint64_t member_id);
  // The member is gone (connection closed): as release, and it is forgotten.
  std::vector<uint64_t> leave(uint64_t member_id);

  std::optional<uint64_t> holder(const std::string& lane_id) const;
  size_t waiting(const std::string& lane_id) const;
  std::optional<pid_t> member_pid(uint64_t member_id) const;
  // The last events (at most 10,000 kept), oldest first.
  std::vector<GateEvent> events() const;
  // The kept events after `sequence` (a poller's cursor), oldest first.
  std::vector<GateEvent> events_since(uint64_t sequence) const;

 private:
  struct Member {
    std::string lane_id;
    pid_t pid = 0;
    int priority = 0;
  };
  struct Lane {
    std::unique_ptr<TurnPolicy> policy;
    std::optional<uint64_t> holder;
    std::vector<TurnCandidate> waiting;
  };

  Lane& lane_locked(const std::string& lane_id);
  void give_back_locked(uint64_t member_id, Lane& lane);
  std::vector<uint64_t> grant_locked(const std::string& lane_id, Lane& lane);
  void record_locked(const std::string& lane_id, uint64_t member_id, GateEventKind kind);

  mutable std::mutex mutex_;
  std::string default_policy_;
  std::map<std::string, Lane> lanes_;
  std::map<uint64_t, Member> members_;
  std::deque<GateEvent> events_;
  uint64_t next_member_id_ = 1;
  uint64_t next_arrival_ = 1;
  uint64_t next_event_ = 1;
};

}  // namespace fleetscope::lanes
