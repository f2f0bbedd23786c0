// Simulator scale: N jobs drawn from the Alibaba 2023 pod list on G GPUs with a queue, every
// policy, lanes on and off. Reference, measured in the same run: the bare event loop of a
// discrete-event simulator (push and pop of the same number of events through a binary heap),
// the floor of any engine of this design; the ratio says how much admission and lane decisions
// cost per event on top of it.
//
// usage: fleetscope_sharer_scale_bench [N...] [--gpus G] [--policy P] [--lanes on|off]
//   default: N = 1000 10000 100000, G = 1000, every policy, lanes off and on.
// Jobs: the GPU pods of the list, repeated until N, with arrivals compressed so that the fleet is
// oversubscribed (a queue forms): copy k of pod i arrives at (creation_i / 1000 + k * 7) s.

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <queue>
#include <string>
#include <vector>

#include "fleetscope/sharer/fleet_packing.h"
#include "fleetscope/sharer/policy.h"
#include "fleetscope/sharer/simulator.h"

namespace {

using namespace fleetscope::sharer;

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

long peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;
}

std::vector<SimJob> make_jobs(const std::vector<Pod>& pods, size_t count, int64_t capacity) {
  const auto base = jobs_from_pods(pods, capacity);
  std::vector<SimJob> jobs;
  jobs.reserve(count);
  for (size_t k = 0; jobs.size() < count; ++k) {
    for (const auto& job : base) {
      if (jobs.size() == count) break;
      SimJob copy = job;
      copy.id = static_cast<int64_t>(jobs.size());
      copy.submit_s = job.submit_s / 1000.0 + static_cast<double>(k) * 7.0;
      jobs.push_back(std::move(copy));
    }
  }
  return jobs;
}

double heap_reference(int64_t events) {
  const auto begin = std::chrono::steady_clock::now();
  std::priority_queue<std::pair<double, int64_t>, std::vector<std::pair<double, int64_t>>,
                      std::greater<>>
      heap;
  uint64_t state = 88172645463325252ull;
  double checksum = 0;
  // Keep about as many events in flight as the simulator (one per running lane, ~1,000).
  for (int64_t i = 0; i < 1000; ++i) heap.emplace(static_cast<double>(i), i);
  for (int64_t i = 0; i < events; ++i) {
    const auto top = heap.top();
    heap.pop();
    checksum += top.first;
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    heap.emplace(top.first + 1.0 + static_cast<double>(state % 1000) * 1e-3, i);
  }
  if (checksum < 0) std::puts("");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes;
  int gpus = 1000;
  std::vector<std::string> policies = policy_names();
  std::vector<bool> lane_modes{false, true};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--gpus") && i + 1 < argc) {
      gpus = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--policy") && i + 1 < argc) {
      policies = {argv[++i]};
    } else if (!std::strcmp(argv[i], "--lanes") && i + 1 < argc) {
      lane_modes = {std::strcmp(argv[++i], "on") == 0};
    } else {
      sizes.push_back(static_cast<size_t>(std::atoll(argv[i])));
    }
  }
  if (sizes.empty()) sizes = {1000, 10000, 100000};
  const auto pods = load_alibaba_pods(std::string(FLEETSCOPE_SHARED_DATA) +
                                      "/jobs/alibaba2023_openb_pod_list_default.csv");
  std::printf(
      "| jobs | GPUs | policy | lanes | events | wall s | CPU s | heap-only ref. s | ratio | "
      "avg JCT s | longest wait s | peak RSS MiB |\n|---:|---:|---|---|---:|---:|---:|---:|"
      "---:|---:|---:|---:|\n");
  for (size_t n : sizes) {
    SimConfig config;
    config.gpus = gpus;
    const auto jobs = make_jobs(pods, n, config.gpu_capacity_bytes);
    for (const auto& name : policies) {
      for (bool lanes : lane_modes) {
        config.lanes = lanes;
        const auto policy = make_policy(name);
        const double cpu_before = cpu_seconds();
        const auto begin = std::chrono::steady_clock::now();
        const auto result = simulate(jobs, *policy, config);
        const double wall =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
        const double cpu = cpu_seconds() - cpu_before;
        const double reference = heap_reference(result.events);
        std::printf(
            "| %zu | %d | %s | %s | %lld | %.2f | %.2f | %.2f | %.1f | %.0f | %.0f | %ld |\n", n,
            gpus, name.c_str(), lanes ? "on" : "off", static_cast<long long>(result.events), wall,
            cpu, reference, wall / reference, result.avg_jct_s,
            std::max(result.max_wait_single_gpu_s, result.max_wait_multi_gpu_s), peak_rss_mib());
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
