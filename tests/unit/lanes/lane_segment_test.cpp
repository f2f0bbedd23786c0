#include "fleetscope/lanes/lane_segment.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>
#include <vector>

#include "temp_dir.h"

namespace fleetscope::lanes {
namespace {

std::unique_ptr<LaneSegment> open_lane(const test_support::TempDir& dir, const std::string& lane,
                                       uint64_t bytes) {
  std::string error;
  auto segment = LaneSegment::open_or_create(LaneSegment::path_for_lane(dir.path().string(), lane),
                                             bytes, &error);
  EXPECT_NE(segment, nullptr) << error;
  return segment;
}

TEST(LaneSegment, LaneIdsAreRestrictedToSafeFileNameCharacters) {
  EXPECT_TRUE(LaneSegment::valid_lane_id("gpu0-lane_3.a"));
  EXPECT_FALSE(LaneSegment::valid_lane_id(""));
  EXPECT_FALSE(LaneSegment::valid_lane_id("../etc"));
  EXPECT_FALSE(LaneSegment::valid_lane_id(".."));
  EXPECT_FALSE(LaneSegment::valid_lane_id("a b"));
  EXPECT_FALSE(LaneSegment::valid_lane_id(std::string(101, 'a')));
  EXPECT_EQ(LaneSegment::path_for_lane("", "x"), "/dev/shm/fleetscope-lane-x");
  EXPECT_EQ(LaneSegment::path_for_lane("/run/fs/", "x"), "/run/fs/fleetscope-lane-x");
}

TEST(LaneSegment, ReservesUpToTheCapacityAndNoFurther) {
  test_support::TempDir dir;
  auto segment = open_lane(dir, "cap", 1000);
  int slot = segment->join(current_process());
  ASSERT_GE(slot, 0);
  EXPECT_TRUE(segment->reserve(slot, 600));
  EXPECT_TRUE(segment->reserve(slot, 400));
  EXPECT_FALSE(segment->reserve(slot, 1));
  segment->release(slot, 400);
  EXPECT_EQ(segment->used(), 600u);
  EXPECT_TRUE(segment->reserve(slot, 400));
  auto usage = segment->usage();
  EXPECT_EQ(usage.peak_used_bytes, 1000u);
  EXPECT_EQ(usage.denied_allocations, 1u);
  // Releasing more than the slot holds only gives back what it holds.
  segment->release(slot, 5000);
  EXPECT_EQ(segment->used(), 0u);
}

TEST(LaneSegment, AnExistingLedgerKeepsItsCapacityAndSecondOpenSeesTheSameState) {
  test_support::TempDir dir;
  auto first = open_lane(dir, "shared", 1000);
  int slot = first->join(current_process());
  ASSERT_TRUE(first->reserve(slot, 300));
  auto second = open_lane(dir, "shared", 5000);
  EXPECT_EQ(second->capacity(), 1000u);
  EXPECT_EQ(second->used(), 300u);
  EXPECT_EQ(second->join(current_process()), slot);  // same process, same slot
  second->set_capacity(2000);
  EXPECT_EQ(first->capacity(), 2000u);
  struct stat info {};
  ASSERT_EQ(::stat(first->path().c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
}

TEST(LaneSegment, RefusesAFileThatIsNotALedger) {
  test_support::TempDir dir;
  std::string path = LaneSegment::path_for_lane(dir.path().string(), "junk");
  std::ofstream(path) << "not a ledger";
  std::string error;
  EXPECT_EQ(LaneSegment::open_or_create(path, 100, &error), nullptr);
  EXPECT_NE(error.find(path), std::string::npos);
  EXPECT_NE(error.find("not a fleetscope lane segment"), std::string::npos);
}

TEST(LaneSegment, ReclaimsTheSlotOfAProcessThatDiedHoldingMemory) {
  test_support::TempDir dir;
  auto segment = open_lane(dir, "dead", 1000);
  pid_t child = ::fork();
  if (child == 0) {
    std::string error;
    auto mine = LaneSegment::open_existing(segment->path(), &error);
    int slot = mine ? mine->join(current_process()) : -1;
    ::_exit(slot >= 0 && mine->reserve(slot, 800) ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(segment->used(), 800u);
  EXPECT_EQ(segment->usage().members, 1u);
  int slot = segment->join(current_process());
  // 800 held by the dead child: this reservation only fits once the child's slot is reclaimed.
  EXPECT_TRUE(segment->reserve(slot, 900));
  EXPECT_EQ(segment->used(), 900u);
  EXPECT_EQ(segment->usage().members, 1u);
}

TEST(LaneSegment, PidReuseIsDetectedByStartTime) {
  ProcessIdentity me = current_process();
  EXPECT_TRUE(process_alive(me));
  ProcessIdentity impostor = me;
  impostor.start_ticks += 1;
  EXPECT_FALSE(process_alive(impostor));
  EXPECT_FALSE(process_alive(ProcessIdentity{}));
}

TEST(LaneSegment, ConcurrentReservationsNeverExceedTheCapacity) {
  test_support::TempDir dir;
  auto segment = open_lane(dir, "race", 10000);
  int slot = segment->join(current_process());
  std::vector<std::thread> threads;
  std::atomic<int> granted{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) granted += segment->reserve(slot, 7) ? 1 : 0;
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(granted.load(), 10000 / 7);
  EXPECT_EQ(segment->used(), static_cast<uint64_t>(granted.load()) * 7);
}

TEST(LaneSegment, WaitingMaskIgnoresTheAskersOwnBit) {
  test_support::TempDir dir;
  auto segment = open_lane(dir, "mask", 0);
  segment->set_waiting(3, true);
  EXPECT_FALSE(segment->others_waiting(3));
  EXPECT_TRUE(segment->others_waiting(4));
  segment->set_waiting(3, false);
  EXPECT_FALSE(segment->others_waiting(4));
}

}  // namespace
}  // namespace fleetscope::lanes
