#include <stdexcept>

#include "fleetscope/sharer/policy.h"

namespace fleetscope::sharer {

namespace {
constexpr const char* kPolicyList =
    "fifo|srtf|pack|fair|fair-gputime|priority|salus-preempt|waterfill";
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
  return state.job->submit_s;
}
double FairPolicy::turn_key(const JobState& state) const {
  return turn_key_at(state, state.usage_reset_s);
}
double FairPolicy::turn_key_at(const JobState& state, double now_s) const {
  const auto& memory = state.job->memory;
  return static_cast<double>(memory.persistent_bytes) * (now_s - state.usage_reset_s) +
         static_cast<double>(memory.ephemeral_peak_bytes) * state.gpu_since_reset_s;
}

double FairGpuTimePolicy::admission_key(const JobState& state) const {
  return state.attained_s;
}
double FairGpuTimePolicy::turn_key(const JobState& state) const {
  return state.attained_s;
}

double WaterFillPolicy::admission_key(const JobState& state) const {
  return state.job->submit_s;
}
double WaterFillPolicy::turn_key(const JobState& state) const {
  return state.last_turn_end_s;
}

double SalusPreemptPolicy::admission_key(const JobState& state) const {
  return state.job->submit_s;
}
double SalusPreemptPolicy::turn_key(const JobState& state) const {
  return -state.job->submit_s;  // the newest first
}

double PriorityPolicy::admission_key(const JobState& state) const {
  return -kPriorityWeight * state.job->priority + state.job->submit_s;
}
double PriorityPolicy::turn_key(const JobState& state) const {
  return -kPriorityWeight * state.job->priority + state.last_turn_end_s;
}

std::vector<std::string> policy_names() {
  return {"fifo", "srtf", "pack", "fair", "fair-gputime", "priority", "salus-preempt", "waterfill"};
}

std::unique_ptr<Policy> make_policy(std::string_view name) {
  if (name == "fifo") return std::make_unique<FifoExclusivePolicy>();
  if (name == "srtf") return std::make_unique<SrtfPolicy>();
  if (name == "pack") return std::make_unique<PackPolicy>();
  if (name == "fair") return std::make_unique<FairPolicy>();
  if (name == "priority") return std::make_unique<PriorityPolicy>();
  if (name == "fair-gputime") return std::make_unique<FairGpuTimePolicy>();
  if (name == "salus-preempt") return std::make_unique<SalusPreemptPolicy>();
  if (name == "waterfill") return std::make_unique<WaterFillPolicy>();
  throw std::invalid_argument("unknown policy '" + std::string(name) + "', expected " +
                              kPolicyList);
}

}  // namespace fleetscope::sharer
