// Simulator scale: N Alibaba-style training jobs (training_jobs_from_pods: the 2023 pod list's GPU
// pods with Salus iteration times, every real iteration simulated) on G GPUs, every policy with
// its `fleetscope sim` default lanes setting. Reference, measured in the same run: the same
// simulator stepping every iteration (fast_forward off) on the sizes up to --reference-max
// (default 10,000; it is what the simulator did before lanes were advanced in closed form). The
// table gives wall and CPU seconds (the machine may be shared: CPU time is the steadier figure),
// the iterations of the trace and how many were stepped one at a time.
//
// usage: fleetscope_sharer_scale_bench [N...] [--gpus G] [--policy P] [--lanes on|off]
//                                      [--reference-max N]
//   default: N = 10000 100000, G = 1000, every policy.

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "fleetscope/sharer/fleet_packing.h"
#include "fleetscope/sharer/policy.h"
#include "fleetscope/sharer/simulator.h"
#include "fleetscope/sharer/workload.h"

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

struct Timed {
  SimResult result;
  double wall_s = 0;
  double cpu_s = 0;
};

Timed timed_run(const std::vector<SimJob>& jobs, const Policy& policy, const SimConfig& config) {
  const double cpu_before = cpu_seconds();
  const auto begin = std::chrono::steady_clock::now();
  Timed timed{simulate(jobs, policy, config)};
  timed.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  timed.cpu_s = cpu_seconds() - cpu_before;
  return timed;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes;
  int gpus = 1000;
  size_t reference_max = 10000;
  std::vector<std::string> policies = policy_names();
  std::string lanes_flag;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--gpus") && i + 1 < argc) {
      gpus = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--policy") && i + 1 < argc) {
      policies = {argv[++i]};
    } else if (!std::strcmp(argv[i], "--lanes") && i + 1 < argc) {
      lanes_flag = argv[++i];
    } else if (!std::strcmp(argv[i], "--reference-max") && i + 1 < argc) {
      reference_max = static_cast<size_t>(std::atoll(argv[++i]));
    } else {
      sizes.push_back(static_cast<size_t>(std::atoll(argv[i])));
    }
  }
  if (sizes.empty()) sizes = {10000, 100000};
  const std::string data = std::string(FLEETSCOPE_SHARED_DATA) + "/jobs/";
  const auto pods = load_alibaba_pods(data + "alibaba2023_openb_pod_list_default.csv");
  const auto profiles = load_salus_profiles(data + "salus_workloads.csv");
  std::printf(
      "| jobs | GPUs | policy | lanes | iterations | stepped | lane events | wall s | CPU s | "
      "stepping ref. wall s | ref. CPU s | ref./closed form (CPU) | avg JCT s | peak RSS MiB |\n"
      "|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t n : sizes) {
    SimConfig config;
    config.gpus = gpus;
    const auto jobs = training_jobs_from_pods(pods, profiles, n, config.gpu_capacity_bytes);
    int64_t iterations = 0;
    for (const auto& job : jobs) iterations += job.iterations;
    for (const auto& name : policies) {
      config.lanes =
          lanes_flag.empty() ? name == "pack" || name == "waterfill" : lanes_flag == "on";
      const auto policy = make_policy(name);
      config.fast_forward = true;
      const auto fast = timed_run(jobs, *policy, config);
      std::string reference_wall = "-";
      std::string reference_cpu = "-";
      std::string ratio = "-";
      if (n <= reference_max) {
        config.fast_forward = false;
        const auto stepped = timed_run(jobs, *policy, config);
        if (stepped.result.avg_jct_s != fast.result.avg_jct_s) {
          const double relative =
              std::abs(stepped.result.avg_jct_s - fast.result.avg_jct_s) / stepped.result.avg_jct_s;
          std::fprintf(stderr, "%s: average JCT differs from stepping by %.3g (relative)\n",
                       name.c_str(), relative);
        }
        reference_wall = std::to_string(stepped.wall_s).substr(0, 7);
        reference_cpu = std::to_string(stepped.cpu_s).substr(0, 7);
        ratio = std::to_string(stepped.cpu_s / fast.cpu_s).substr(0, 6);
      }
      std::printf(
          "| %zu | %d | %s | %s | %lld | %lld | %lld | %.2f | %.2f | %s | %s | %s | %.0f | "
          "%ld |\n",
          n, gpus, name.c_str(), config.lanes ? "on" : "off", static_cast<long long>(iterations),
          static_cast<long long>(fast.result.stepped_iterations),
          static_cast<long long>(fast.result.events), fast.wall_s, fast.cpu_s,
          reference_wall.c_str(), reference_cpu.c_str(), ratio.c_str(), fast.result.avg_jct_s,
          peak_rss_mib());
      std::fflush(stdout);
    }
  }
  return 0;
}
