// Fuzz target: `share plan --candidates` JSON. Parsing must either succeed or throw a
// std::runtime_error naming the input; small inputs that parse are planned and replayed.

#include <cstdint>
#include <stdexcept>
#include <string>

#include "fleetscope/sharer/job_profile.h"
#include "fleetscope/sharer/planner.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fleetscope::sharer;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<JobProfile> jobs;
  try {
    jobs = parse_job_profiles(text, "fuzz.json");
  } catch (const std::runtime_error&) {
    return 0;
  }
  if (jobs.size() > 32) return 0;
  const auto plan = plan_consolidation(jobs);
  if (plan.jobs.size() != jobs.size()) __builtin_trap();
  try {
    replay_plan(jobs, plan, PlannerOptions{}, 20);
  } catch (const std::invalid_argument&) {
    // e.g. a job larger than its GPU: refused by the simulator's checks.
  }
  return 0;
}
