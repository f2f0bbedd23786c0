#pragma once
// Which waiting member of a lane gets the next turn at an iteration boundary. The arbiter asks
// its lane's policy each time the turn is free; a policy only orders, it never blocks.
//  - fifo:     first come, first served. A member that yields re-queues at the back, so a
//              contended lane alternates (round robin at iteration granularity, as Salus).
//  - srtf:     shortest remaining time first (remaining = steps left x measured step time, sent
//              by the member at each boundary); unknown remaining time goes last; ties by arrival.
//  - priority: highest FLEETSCOPE_JOB_PRIORITY first; ties by arrival. Preemption happens at
//              the holder's next boundary, never inside an iteration.

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace fleetscope::lanes {

struct TurnCandidate {
  uint64_t member_id = 0;
  uint64_t arrival = 0;  // monotonically increasing per request
  int priority = 0;
  uint64_t remaining_ns = 0;  // 0: unknown
};

class TurnPolicy {
 public:
  virtual ~TurnPolicy() = default;
  virtual std::string_view name() const = 0;
  // Index into `waiting` (never empty) of the member that runs next.
  virtual size_t pick(const std::vector<TurnCandidate>& waiting) const = 0;
};

// "fifo", "srtf" or "priority"; nullptr for any other name.
std::unique_ptr<TurnPolicy> make_turn_policy(std::string_view name);
// The names make_turn_policy accepts, fifo (the default) first: what `share apply --policy` and
// the GUI's policy control offer.
std::vector<std::string_view> turn_policy_names();

}  // namespace fleetscope::lanes
