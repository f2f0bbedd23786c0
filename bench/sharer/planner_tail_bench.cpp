// Planner cost of the tail (p99) checks (issue 25): the same 100,000 candidates planned with the
// p99 checks (PlannerOptions::tail_checks, the default) and without them (the reference: the mean
// slowdown bound only), alternating in one run, several repetitions each. Candidates: each alone on
// its own 16 GiB GPU, P 256 MiB-2 GiB, T 128-512 MiB, utilization 0.01-0.30, iterations 50-99 ms
// (the generator of docs/benchmarks.md, "Planner at scale") with a p99 step time of
// 1 + 0.25 (i mod 7) times the iteration (the /tmp/cand100k_p99.json of the tail-aware placement
// work); with --latency every tenth job is latency-sensitive with a p99_target_ms of 3x its
// iteration (the shared-lane path that needs the p99 check).
//
// usage: fleetscope_sharer_planner_tail_bench [N] [--repetitions R] [--latency]
//   default: N = 100000, R = 3.

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fleetscope/sharer/planner.h"

namespace {

using namespace fleetscope::sharer;

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

std::vector<JobProfile> candidates(int count, bool latency) {
  std::vector<JobProfile> jobs;
  jobs.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    JobProfile job;
    job.job_id = "j" + std::to_string(i);
    job.workflow = job.job_id;
    job.gpu = "gpu" + std::to_string(i);
    job.persistent_bytes = int64_t{1} << (28 + i % 4);
    job.ephemeral_peak_bytes = int64_t{1} << (27 + i % 3);
    job.gpu_capacity_bytes = 16 * kGiB;
    job.utilization = 0.01 * (1 + i % 30);
    job.iteration_ns = 50'000'000 + 1'000'000 * (i % 50);
    job.iteration_p99_ns = job.iteration_ns + job.iteration_ns / 4 * (i % 7);
    if (latency && i % 10 == 0) {
      job.labels["class"] = "latency";
      job.labels["p99_target_ms"] = std::to_string(3 * job.iteration_ns / 1'000'000);
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

struct Run {
  double wall_s = 0;
  double cpu_s = 0;
  int gpus_after = 0;
};

Run timed_plan(const std::vector<JobProfile>& jobs, bool tail_checks) {
  PlannerOptions options;
  options.tail_checks = tail_checks;
  const double cpu_before = cpu_seconds();
  const auto begin = std::chrono::steady_clock::now();
  const auto plan = plan_consolidation(jobs, options);
  Run run;
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  run.cpu_s = cpu_seconds() - cpu_before;
  run.gpus_after = plan.gpus_after;
  return run;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

}  // namespace

int main(int argc, char** argv) {
  int count = 100000;
  int repetitions = 3;
  bool latency = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repetitions") == 0 && i + 1 < argc) {
      repetitions = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--latency") == 0) {
      latency = true;
    } else {
      count = std::max(1, std::atoi(argv[i]));
    }
  }
  const auto jobs = candidates(count, latency);
  std::vector<double> cpu_with, cpu_without, wall_with, wall_without;
  int gpus_with = 0;
  int gpus_without = 0;
  for (int r = 0; r < repetitions; ++r) {
    // Alternate which goes first so that a warm cache or a busy neighbour favours neither.
    for (const bool tail_checks : {r % 2 == 0, r % 2 != 0}) {
      const Run run = timed_plan(jobs, tail_checks);
      (tail_checks ? cpu_with : cpu_without).push_back(run.cpu_s);
      (tail_checks ? wall_with : wall_without).push_back(run.wall_s);
      (tail_checks ? gpus_with : gpus_without) = run.gpus_after;
    }
  }
  std::printf("%d candidates%s, %d repetitions each (medians)\n", count,
              latency ? " (every tenth latency-sensitive with a p99 target)" : "", repetitions);
  std::printf("%-22s %10s %10s %12s\n", "planner", "CPU s", "wall s", "GPUs after");
  std::printf("%-22s %10.3f %10.3f %12d\n", "mean bound only (ref.)", median(cpu_without),
              median(wall_without), gpus_without);
  std::printf("%-22s %10.3f %10.3f %12d\n", "with p99 checks", median(cpu_with), median(wall_with),
              gpus_with);
  std::printf("p99 checks / reference: %.2fx CPU, %.2fx wall\n",
              median(cpu_with) / median(cpu_without), median(wall_with) / median(wall_without));
  return 0;
}
