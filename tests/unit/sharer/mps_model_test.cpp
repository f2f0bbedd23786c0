// The MPS model (sim --mps): one client process per job with its own context and a static memory
// slice, every client running at once, at most the client limit per GPU.

#include <gtest/gtest.h>

#include <algorithm>

#include "fleetscope/sharer/lane_allocator.h"
#include "fleetscope/sharer/mps.h"
#include "fleetscope/sharer/simulator.h"

namespace fleetscope::sharer {
namespace {

std::vector<SimJob> jobs(int count, int64_t persistent, int64_t ephemeral, double utilization) {
  std::vector<SimJob> out;
  for (int i = 0; i < count; ++i) {
    SimJob job;
    job.id = i;
    job.name = "j" + std::to_string(i);
    job.iterations = 20;
    job.iteration_s = 1.0;
    job.utilization = utilization;
    job.memory = MemoryDemand{persistent, ephemeral, 0};
    out.push_back(job);
  }
  return out;
}

// The largest number of jobs running at one instant (a job runs from its start to its finish).
int peak_concurrency(const SimResult& result) {
  int peak = 0;
  for (const auto& at : result.jobs) {
    int running = 0;
    for (const auto& other : result.jobs) {
      if (other.start_s <= at.start_s && at.start_s < other.finish_s) ++running;
    }
    peak = std::max(peak, running);
  }
  return peak;
}

SimConfig mps_config(int clients, int64_t context) {
  SimConfig config;
  config.gpus = 1;
  config.lanes = true;
  config.mps_clients = clients;
  config.memory.context_bytes = context;
  config.memory.margin.z = 0;  // slices are exactly P + T + context
  config.interference.alpha = 0;
  return config;
}

TEST(MpsModel, AGpuServesAtMostTheClientLimit) {
  // 60 tiny jobs fit in memory many times over; MPS takes 16 (pre-Volta) or 48 (Volta) at once.
  const auto tiny = jobs(60, 10 * kMiB, 0, 0.01);
  for (int clients : {kMpsClientsPreVolta, kMpsClientsVolta}) {
    const auto result = simulate(tiny, PackPolicy{}, mps_config(clients, 0));
    EXPECT_EQ(peak_concurrency(result), clients) << clients;
    for (const auto& job : result.jobs) EXPECT_TRUE(job.finished);
  }
  // Lanes have no client limit: all 60 run at once.
  SimConfig lanes = mps_config(0, 0);
  EXPECT_EQ(peak_concurrency(simulate(tiny, PackPolicy{}, lanes)), 60);
}

TEST(MpsModel, EveryClientPaysItsContextAndItsOwnEphemeralMemory) {
  // P = T = 1 GiB on 16 GiB. MPS: a slice of P + T + context each: 8 without a context,
  // 6 with 300 MiB (16384 / 2348 = 6.98). Lanes share T between jobs of a lane (sum P + max T)
  // and fit more.
  const auto mid = jobs(12, kGiB, kGiB, 0.1);
  EXPECT_EQ(peak_concurrency(simulate(mid, PackPolicy{}, mps_config(48, 0))), 8);
  EXPECT_EQ(peak_concurrency(simulate(mid, PackPolicy{}, mps_config(48, 300 * kMiB))), 6);
  EXPECT_GT(peak_concurrency(simulate(mid, PackPolicy{}, mps_config(0, 300 * kMiB))), 6);
}

TEST(MpsModel, SlicesAreNeverSharedAndTheLimitIsPerGpu) {
  LaneAllocator gpu(16 * kGiB, MemoryModel{SafetyMargin{0, 0}, 0});
  const auto options = mps_admit_options(3);
  for (int64_t job = 0; job < 3; ++job) {
    const auto placement = gpu.admit(job, MemoryDemand{kMiB, 0, 0}, options);
    ASSERT_TRUE(placement.has_value());
    EXPECT_TRUE(placement->new_lane);
  }
  EXPECT_FALSE(gpu.admit(3, MemoryDemand{kMiB, 0, 0}, options).has_value());
  EXPECT_EQ(gpu.lanes().size(), 3u);
  for (const auto& lane : gpu.lanes()) EXPECT_TRUE(lane.solo);
}

TEST(MpsModel, NeedsLanesOnAndASharingPolicy) {
  SimConfig off = mps_config(48, 0);
  off.lanes = false;
  EXPECT_THROW(simulate(jobs(1, kMiB, 0, 1), PackPolicy{}, off), std::invalid_argument);
  SimConfig negative = mps_config(-1, 0);
  EXPECT_THROW(simulate(jobs(1, kMiB, 0, 1), PackPolicy{}, negative), std::invalid_argument);
}

}  // namespace
}  // namespace fleetscope::sharer
