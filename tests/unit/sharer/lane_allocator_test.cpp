#include "fleetscope/sharer/lane_allocator.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace fleetscope::sharer {
namespace {

// No margin, no rounding, no CUDA context: lanes hold exactly sum P + max T.
MemoryModel exact() {
  MemoryModel model;
  model.margin.z = 0;
  model.margin.granularity_bytes = 1;
  model.context_bytes = 0;
  return model;
}

TEST(LaneAllocator, NewJobGetsALaneSizedToItsRequirement) {
  LaneAllocator gpu(1000, exact());
  auto placement = gpu.admit(1, {100, 200, 0});
  ASSERT_TRUE(placement);
  EXPECT_TRUE(placement->new_lane);
  ASSERT_EQ(gpu.lanes().size(), 1u);
  EXPECT_EQ(gpu.lanes()[0].capacity_bytes, 300);
  EXPECT_EQ(gpu.free_bytes(), 700);
  EXPECT_EQ(gpu.check_invariants(), "");
}

const AdmitOptions kOwnLane{false};

TEST(LaneAllocator, OpensANewLaneBeforeSharingOneAsSalusDoes) {
  // Salus's LaneMgr::GpuControlBlock::bestFitFor opens a lane when free memory holds the job and
  // shares a lane only otherwise.
  LaneAllocator gpu(1000, exact());
  gpu.admit(1, {100, 400, 0});              // lane [0, 500)
  auto second = gpu.admit(2, {0, 300, 0});  // free memory holds it: a lane of its own
  ASSERT_TRUE(second);
  EXPECT_TRUE(second->new_lane);
  EXPECT_EQ(gpu.lanes().size(), 2u);
  EXPECT_EQ(gpu.free_bytes(), 200);
  // Now no free segment holds 300: the job shares the lane with the least room left
  // (100 + max(400, 300) = 500 fits the first lane as it is).
  auto third = gpu.admit(3, {0, 300, 0});
  ASSERT_TRUE(third);
  EXPECT_FALSE(third->new_lane);
  EXPECT_EQ(third->added_bytes, 0);
  EXPECT_EQ(gpu.lanes().size(), 2u);
  EXPECT_EQ(gpu.check_invariants(), "");
}

TEST(LaneAllocator, FitsAtLeastAsManyJobsAsStaticPartitioning) {
  // Identical inference services (P = 300 MiB model + context, T = 60 MiB) on 16 GiB: best fit
  // with new lanes first never fits fewer than cutting the GPU into equal static slices.
  MemoryModel model;  // real margin (2 % prior, z = 3, 2 MiB granularity) and context
  const SafetyMargin& margin = model.margin;
  LaneAllocator gpu(16 * kGiB, model);
  const MemoryDemand service{300 * kMiB, 60 * kMiB, -1};
  const int64_t slice = required_bytes_with(LaneLoad{}, service, margin) + model.context_bytes;
  const int64_t static_count = (16 * kGiB) / slice;
  int64_t admitted = 0;
  while (gpu.admit(admitted, service)) ++admitted;
  EXPECT_GE(admitted, static_count);
  EXPECT_EQ(gpu.check_invariants(), "");
}

TEST(LaneAllocator, BestFitIsTheLaneNeedingTheLeastExtraMemory) {
  LaneAllocator gpu(1000, exact());
  gpu.admit(1, {100, 300, 0}, kOwnLane);  // A [0, 400)
  gpu.admit(2, {0, 100, 0}, kOwnLane);    // B [400, 500)
  gpu.admit(3, {0, 200, 0}, kOwnLane);    // C [500, 700)
  gpu.admit(5, {0, 250, 0}, kOwnLane);    // D [700, 950)
  gpu.release(2);                         // 150 free
  // Job 4's own lane (310) does not fit in 150. In A: 160 + 300 = 460, A grows by 60; in C:
  // 60 + 250 = 310, C would grow by 110; in D: 310, D would grow by 60 too (A comes first).
  auto fourth = gpu.admit(4, {60, 250, 0});
  ASSERT_TRUE(fourth);
  EXPECT_EQ(fourth->lane_id, *gpu.lane_of(1));
  EXPECT_EQ(fourth->added_bytes, 60);
  EXPECT_EQ(gpu.find_lane(fourth->lane_id)->capacity_bytes, 460);
  EXPECT_EQ(gpu.check_invariants(), "");
}

TEST(LaneAllocator, RejectsWhatDoesNotFitAnywhere) {
  LaneAllocator gpu(1000, exact());
  ASSERT_TRUE(gpu.admit(1, {600, 100, 0}));  // [0, 700)
  // Sharing needs 850 + 200 = 1050 (350 more than the 300 free); its own lane needs 450.
  EXPECT_FALSE(gpu.admit(2, {250, 200, 0}));
  EXPECT_EQ(gpu.job_count(), 1u);
  EXPECT_FALSE(gpu.admit(1, {1, 1, 0}));  // already admitted
}

TEST(LaneAllocator, SoloLanesAreNeverShared) {
  LaneAllocator gpu(1000, exact());
  AdmitOptions solo;
  solo.solo = true;
  gpu.admit(1, {100, 400, 0}, solo);
  auto second = gpu.admit(2, {0, 100, 0});
  ASSERT_TRUE(second);
  EXPECT_TRUE(second->new_lane);
}

TEST(LaneAllocator, LanesAreBudgetsSoFreedMemoryNeverFragments) {
  // docs/sharer.md, "The memory model": a lane is a byte budget (the interposition library counts
  // a job's allocations; it does not place them), so memory freed between two lanes and at the
  // end is one amount. A contiguous layout would refuse job 4: no single hole holds 400.
  LaneAllocator gpu(1000, exact());
  gpu.admit(1, {0, 200, 0}, kOwnLane);
  gpu.admit(2, {0, 300, 0}, kOwnLane);
  gpu.admit(3, {0, 300, 0}, kOwnLane);
  gpu.release(1);  // 200 freed "before" lane 2, 200 left "after" lane 3
  EXPECT_EQ(gpu.free_bytes(), 400);
  auto fourth = gpu.admit(4, {0, 400, 0}, kOwnLane);
  ASSERT_TRUE(fourth);
  EXPECT_TRUE(fourth->new_lane);
  EXPECT_EQ(gpu.free_bytes(), 0);
  // Offsets lay the budgets out end to end in lane order (display only).
  EXPECT_EQ(gpu.find_lane(*gpu.lane_of(2))->offset_bytes, 0);
  EXPECT_EQ(gpu.find_lane(*gpu.lane_of(4))->offset_bytes, 600);
  EXPECT_EQ(gpu.check_invariants(), "");
  for (int64_t job : {2, 3, 4}) gpu.release(job);
  EXPECT_EQ(gpu.free_bytes(), 1000);
  EXPECT_TRUE(gpu.lanes().empty());
}

TEST(LaneAllocator, EveryJobPaysItsContextOutsideItsLane) {
  MemoryModel model = exact();
  model.context_bytes = 100;
  LaneAllocator gpu(1000, model);
  ASSERT_TRUE(gpu.admit(1, {300, 100, 0}));  // lane 400 + context 100
  EXPECT_EQ(gpu.free_bytes(), 500);
  ASSERT_TRUE(gpu.admit(2, {300, 100, 0}));  // a lane of its own: 400 + 100
  EXPECT_EQ(gpu.free_bytes(), 0);
  EXPECT_EQ(gpu.lanes().size(), 2u);
  // Even a job that fits a lane as it is needs room for its context.
  EXPECT_FALSE(gpu.probe({0, 1, 0}));
  gpu.release(2);
  EXPECT_EQ(gpu.free_bytes(), 500);
  // Joining lane 1 costs 300 more lane memory plus the context: 400 <= 500.
  auto third = gpu.admit(3, {300, 50, 0}, AdmitOptions{true, false});
  ASSERT_TRUE(third);
  EXPECT_EQ(third->added_bytes, 300);
  EXPECT_EQ(gpu.free_bytes(), 100);
  EXPECT_EQ(gpu.check_invariants(), "");
}

TEST(LaneAllocator, DepartureShrinksTheLaneButKeepsTheRestSafe) {
  LaneAllocator gpu(1000, exact());
  gpu.admit(1, {100, 400, 0});  // lane [0, 500)
  gpu.admit(4, {0, 300, 0});    // shares it: 100 + 400
  gpu.release(1);               // the lane shrinks to 0 + 300; 200 bytes go back
  const Lane* lane = gpu.find_lane(*gpu.lane_of(4));
  ASSERT_NE(lane, nullptr);
  EXPECT_EQ(lane->capacity_bytes, 300);
  EXPECT_EQ(gpu.free_bytes(), 700);
  EXPECT_EQ(gpu.check_invariants(), "");
}

TEST(LaneAllocator, LanesOffMeansOneWholeGpuLane) {
  LaneAllocator gpu(1000, exact());
  AdmitOptions off;
  off.max_lanes = 1;
  off.new_lane_bytes = 1000;
  gpu.admit(1, {100, 300, 0}, off);
  gpu.admit(2, {100, 500, 0}, off);  // 200 + 500 <= 1000: shares the lane
  EXPECT_EQ(gpu.lanes().size(), 1u);
  EXPECT_FALSE(gpu.admit(3, {500, 0, 0}, off));  // 700 + 500 > 1000 and no second lane
}

TEST(LaneAllocator, GrowsALaneIntoFreeSpaceAfterIt) {
  LaneAllocator gpu(1000, exact());
  gpu.admit(1, {0, 500, 0}, kOwnLane);       // [0, 500)
  gpu.admit(2, {0, 400, 0}, kOwnLane);       // [500, 900)
  gpu.release(2);                            // free [500, 1000)
  auto grown = gpu.admit(4, {300, 550, 0});  // 300 + 550 = 850: lane 1 grows by 350
  ASSERT_TRUE(grown);
  EXPECT_EQ(grown->lane_id, *gpu.lane_of(1));
  EXPECT_EQ(gpu.find_lane(grown->lane_id)->capacity_bytes, 850);
  EXPECT_EQ(gpu.check_invariants(), "");
}

TEST(LaneAllocator, GrowsALaneIntoFreeMemoryAnywhere) {
  LaneAllocator gpu(1000, exact());
  gpu.admit(1, {0, 200, 0}, kOwnLane);
  gpu.admit(2, {0, 300, 0}, kOwnLane);
  gpu.admit(3, {0, 500, 0}, kOwnLane);
  gpu.release(1);                            // 200 free
  auto grown = gpu.admit(5, {100, 300, 0});  // lane 2 needs 400: grows by 100
  ASSERT_TRUE(grown);
  const Lane* lane = gpu.find_lane(*gpu.lane_of(2));
  EXPECT_EQ(grown->lane_id, lane->id);
  EXPECT_EQ(lane->offset_bytes, 0);
  EXPECT_EQ(lane->capacity_bytes, 400);
  EXPECT_EQ(gpu.free_bytes(), 100);
  EXPECT_EQ(gpu.check_invariants(), "");
}

// Property test: random arrivals and departures. After every operation the safety condition holds
// for every lane, memory (lanes, contexts, free) is neither double- nor un-counted, and no job
// admitted earlier ever ends up in a lane that can no longer hold it.
class LaneAllocatorProperty : public ::testing::TestWithParam<int> {};

TEST_P(LaneAllocatorProperty, InvariantsHoldUnderRandomArrivalsAndDepartures) {
  std::mt19937_64 rng(static_cast<uint64_t>(GetParam()));
  MemoryModel model;  // real margin (3 sigma, 2% prior, 2 MiB granularity), 300 MiB contexts
  const SafetyMargin& margin = model.margin;
  const int64_t capacity = 16 * kGiB;
  LaneAllocator gpu(capacity, model);
  std::map<int64_t, MemoryDemand> resident;
  std::uniform_int_distribution<int64_t> persistent(0, 2 * kGiB);
  std::uniform_int_distribution<int64_t> ephemeral(0, 4 * kGiB);
  std::uniform_real_distribution<double> coin(0, 1);
  int64_t next_job = 0;
  int admitted = 0;
  for (int step = 0; step < 3000; ++step) {
    if (resident.empty() || coin(rng) < 0.55) {
      MemoryDemand demand{persistent(rng), ephemeral(rng), coin(rng) < 0.5 ? -1.0 : 32.0 * kMiB};
      AdmitOptions options;
      options.allow_shared_lane = coin(rng) < 0.8;
      options.solo = coin(rng) < 0.1;
      if (gpu.admit(next_job, demand, options)) {
        resident[next_job] = demand;
        ++admitted;
      }
      ++next_job;
    } else {
      auto victim = resident.begin();
      std::advance(victim, std::uniform_int_distribution<size_t>(0, resident.size() - 1)(rng));
      ASSERT_TRUE(gpu.release(victim->first));
      resident.erase(victim);
    }
    ASSERT_EQ(gpu.check_invariants(), "") << "after step " << step;
    ASSERT_EQ(gpu.job_count(), resident.size());
    // Every resident job is still guaranteed: its lane holds it and everyone else safely.
    for (const auto& [job, demand] : resident) {
      const Lane* lane = gpu.find_lane(*gpu.lane_of(job));
      ASSERT_NE(lane, nullptr);
      std::vector<MemoryDemand> members;
      for (const auto& member : lane->jobs) members.push_back(member.demand);
      ASSERT_TRUE(satisfies_safety(members, lane->capacity_bytes, margin));
    }
    int64_t held = gpu.free_bytes() + model.contexts_bytes(int64_t(resident.size()));
    for (const auto& lane : gpu.lanes()) held += lane.capacity_bytes;
    ASSERT_EQ(held, capacity);
  }
  EXPECT_GT(admitted, 100);
  while (!resident.empty()) {
    gpu.release(resident.begin()->first);
    resident.erase(resident.begin());
  }
  // Everything comes back.
  EXPECT_EQ(gpu.free_bytes(), capacity);
  EXPECT_TRUE(gpu.lanes().empty());
}

INSTANTIATE_TEST_SUITE_P(Seeds, LaneAllocatorProperty, ::testing::Values(1, 2, 3, 42, 1234));

}  // namespace
}  // namespace fleetscope::sharer
