#include "fleetscope/lanes/turn_policy.h"

#include <limits>
#include <tuple>

namespace fleetscope::lanes {
namespace {

// Picks the candidate with the smallest key; `Key` maps a candidate to a tuple ending in arrival.
template <typename Key>
size_t pick_min(const std::vector<TurnCandidate>& waiting, Key key) {
  size_t best = 0;
  for (size_t i = 1; i < waiting.size(); ++i) {
    if (key(waiting[i]) < key(waiting[best])) best = i;
  }
  return best;
}

class FifoTurnPolicy final : public TurnPolicy {
 public:
  std::string_view name() const override { return "fifo"; }
  size_t pick(const std::vector<TurnCandidate>& waiting) const override {
    return pick_min(waiting, [](const TurnCandidate& c) { return c.arrival; });
  }
};

class SrtfTurnPolicy final : public TurnPolicy {
 public:
  std::string_view name() const override { return "srtf"; }
  size_t pick(const std::vector<TurnCandidate>& waiting) const override {
    return pick_min(waiting, [](const TurnCandidate& c) {
      uint64_t remaining =
          c.remaining_ns == 0 ? std::numeric_limits<uint64_t>::max() : c.remaining_ns;
      return std::make_tuple(remaining, c.arrival);
    });
  }
};

class PriorityTurnPolicy final : public TurnPolicy {
 public:
  std::string_view name() const override { return "priority"; }
  size_t pick(const std::vector<TurnCandidate>& waiting) const override {
    return pick_min(waiting, [](const TurnCandidate& c) {
      return std::make_tuple(-static_cast<int64_t>(c.priority), c.arrival);
    });
  }
};

}  // namespace

std::unique_ptr<TurnPolicy> make_turn_policy(std::string_view name) {
  if (name == "fifo") return std::make_unique<FifoTurnPolicy>();
  if (name == "srtf") return std::make_unique<SrtfTurnPolicy>();
  if (name == "priority") return std::make_unique<PriorityTurnPolicy>();
  return nullptr;
}

std::vector<std::string_view> turn_policy_names() {
  return {"fifo", "srtf", "priority"};
}

}  // namespace fleetscope::lanes
