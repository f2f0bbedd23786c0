// Fuzz target: a Tiresias-format job trace. Parsing must either succeed or throw a
// std::runtime_error/std::invalid_argument naming the input; what parses is then simulated
// (when small enough to finish quickly) under two policies, which must terminate.

#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "fleetscope/sharer/policy.h"
#include "fleetscope/sharer/simulator.h"
#include "fleetscope/sharer/workload.h"

namespace {

const fleetscope::sharer::ProfileTable& profiles() {
  // Two models, three batch sizes of one, a mislabelled duration: enough for every code path of
  // the profile derivation.
  static const auto table = fleetscope::sharer::parse_salus_profiles(
      "resnet50_25_1min,60,1500,300,cmd\n"
      "resnet50_25_5min,300,1500,1500,cmd\n"
      "resnet50_50_1min,61,2500,200,cmd\n"
      "resnet50_50_10min,601,2500,2000,cmd\n"
      "alexnet_100_1min,60,1400,900,cmd\n"
      "alexnet_100_1min,300,1400,4500,cmd\n",
      "fuzz-profiles");
  return table;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fleetscope::sharer;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<SimJob> jobs;
  try {
    jobs = parse_tiresias_jobs(text, "fuzz.csv", profiles());
  } catch (const std::runtime_error&) {
    return 0;
  }
  int64_t iterations = 0;
  for (const auto& job : jobs) iterations += job.iterations;
  if (jobs.size() > 64 || iterations > 20000) return 0;
  for (const char* name : {"srtf", "pack"}) {
    SimConfig config;
    config.gpus = 4;
    try {
      simulate(jobs, *make_policy(name), config);
    } catch (const std::invalid_argument&) {
      // A job that can never run (too many GPUs, too much memory) is a clean refusal.
    }
  }
  return 0;
}
