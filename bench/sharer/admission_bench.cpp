// Admission decision latency with 1,000 lanes of 4 jobs each.
//   BestFitProbe:         the allocator's decision (cached per-lane aggregates, O(1) per lane).
//   NaiveRecomputeProbe:  reference: the same best-fit decision recomputing every lane's safety
//                         condition from its job list.
//   AdmitRelease:         a full admission plus the departure that undoes it.

#include <benchmark/benchmark.h>

#include <limits>

#include "fleetscope/sharer/lane_allocator.h"

namespace fleetscope::sharer {
namespace {

constexpr int kJobsPerLane = 4;

LaneAllocator make_gpu(int lanes) {
  // Lanes of 2 GiB with room to spare, so a newcomer fits many of them and best fit must compare.
  // The free tail (128 MiB) is smaller than the newcomer's own lane, so the decision is the lane
  // scan (a new lane, which Salus's order tries first, is not possible).
  // No CUDA contexts: they only take free memory, the scan is the same.
  MemoryModel model;
  model.context_bytes = 0;
  LaneAllocator gpu(static_cast<int64_t>(lanes) * 2 * kGiB + 128 * kMiB, model);
  AdmitOptions own_lane;
  own_lane.allow_shared_lane = false;
  own_lane.new_lane_bytes = 2 * kGiB;
  int64_t job = 0;
  for (int lane = 0; lane < lanes; ++lane) {
    gpu.admit(job++, {256 * kMiB, 512 * kMiB + lane * kMiB / 4, -1}, own_lane);
  }
  AdmitOptions join;
  join.allow_new_lane = false;
  for (int round = 1; round < kJobsPerLane; ++round) {
    for (int lane = 0; lane < lanes; ++lane) gpu.admit(job++, {96 * kMiB, 256 * kMiB, -1}, join);
  }
  return gpu;
}

const MemoryDemand kNewcomer{64 * kMiB, 300 * kMiB, -1};

void BestFitProbe(benchmark::State& state) {
  const auto gpu = make_gpu(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(gpu.probe(kNewcomer));
  state.counters["lanes"] = static_cast<double>(gpu.lanes().size());
  state.counters["jobs"] = static_cast<double>(gpu.job_count());
}
BENCHMARK(BestFitProbe)->Arg(1000)->Unit(benchmark::kMicrosecond);

void NaiveRecomputeProbe(benchmark::State& state) {
  const auto gpu = make_gpu(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    int best_lane = -1;
    int64_t best_leftover = std::numeric_limits<int64_t>::max();
    for (const auto& lane : gpu.lanes()) {
      std::vector<MemoryDemand> members;
      for (const auto& job : lane.jobs) members.push_back(job.demand);
      members.push_back(kNewcomer);
      if (!satisfies_safety(members, lane.capacity_bytes, gpu.margin())) continue;
      LaneLoad load;
      for (const auto& member : members) load.add(member, gpu.margin());
      const int64_t leftover = lane.capacity_bytes - required_bytes(load, gpu.margin());
      if (leftover < best_leftover) {
        best_leftover = leftover;
        best_lane = lane.id;
      }
    }
    benchmark::DoNotOptimize(best_lane);
  }
}
BENCHMARK(NaiveRecomputeProbe)->Arg(1000)->Unit(benchmark::kMicrosecond);

void AdmitRelease(benchmark::State& state) {
  auto gpu = make_gpu(static_cast<int>(state.range(0)));
  const int64_t job = 1 << 30;
  for (auto _ : state) {
    benchmark::DoNotOptimize(gpu.admit(job, kNewcomer));
    gpu.release(job);
  }
}
BENCHMARK(AdmitRelease)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace fleetscope::sharer
