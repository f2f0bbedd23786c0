#include <stdexcept>

#include "fleetscope/sharer/policy.h"

namespace fleetscope::sharer {

namespace {
// Priorities dominate every time-based key (traces span far less than 1e12 seconds).
constexpr double kPriorityWeight = 1e12;
}  // namespace

double FifoExclusivePolicy::admission_key(const JobState& state) const {
  return state.job->submit_s;
}
double FifoExclusivePolicy::turn_key(const JobState& state) const {
  return state.job->submit_s;
}

double SrtfPolicy::admission_key(const JobState& state) const {
  return state.remaining_s();
}
double SrtfPolicy::turn_key(const JobState& state) const {
  return state.remaining_s();
}

double PackPolicy::admission_key(const JobState& state) const {
  return state.job->submit_s;
}
double PackPolicy::turn_key(const JobState& state) const {
  return state.last_turn_end_s;
}

double FairPolicy::admission_key(const JobState& state) const {
  return state.attained_s;
}
double FairPolicy::turn_key(const JobState& state) const {
  return state.attained_s;
}

double PriorityPolicy::admission_key(const JobState& state) const {
  return -kPriorityWeight * state.job->priority + state.job->submit_s;
}
double PriorityPolicy::turn_key(const JobState& state) const {
  return -kPriorityWeight * state.job->priority + state.last_turn_end_s;
}

std::vector<std::string> policy_names() {
  return {"fifo", "srtf", "pack", "fair", "priority"};
}

std::unique_ptr<Policy> make_policy(std::string_view name) {
  if (name == "fifo") return std::make_unique<FifoExclusivePolicy>();
  if (name == "srtf") return std::make_unique<SrtfPolicy>();
  if (name == "pack") return std::make_unique<PackPolicy>();
  if (name == "fair") return std::make_unique<FairPolicy>();
  if (name == "priority") return std::make_unique<PriorityPolicy>();
  throw std::invalid_argument("unknown policy '" + std::string(name) +
                              "', expected fifo|srtf|pack|fair|priority");
}

}  // namespace fleetscope::sharer
