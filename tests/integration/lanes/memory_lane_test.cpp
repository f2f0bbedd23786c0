// The interposition library in real processes: lane_member jobs started with LD_PRELOAD on top of
// the stand-in libcuda.so.1, reaching it through dlsym, cuGetProcAddress and direct linking.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include "fleetscope/lanes/lane_segment.h"
#include "member_process.h"
#include "temp_dir.h"

namespace fleetscope::lanes {
namespace {

using test_support::MemberProcess;

constexpr uint64_t kMiB = 1024 * 1024;

class MemoryLaneTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::string program() const {
    return GetParam() == "linked" ? FLEETSCOPE_LANE_MEMBER_LINKED : FLEETSCOPE_LANE_MEMBER;
  }

  // The environment of a job in lane `lane` of `lane_bytes` on the shared stand-in device.
  std::map<std::string, std::string> lane_env(const std::string& lane, uint64_t lane_bytes) const {
    std::map<std::string, std::string> env = device_env();
    env["LD_PRELOAD"] = FLEETSCOPE_LANES_LIBRARY;
    env.merge(test_support::granted_lane(dir_.path().string(), lane, lane_bytes));
    return env;
  }
  std::map<std::string, std::string> device_env() const {
    return {{"LD_LIBRARY_PATH", FLEETSCOPE_STAND_IN_DIR},
            {"FLEETSCOPE_STANDIN_DEVICE_FILE", dir_.file("device")},
            {"FLEETSCOPE_STANDIN_DEVICE_BYTES", std::to_string(16 * kMiB)}};
  }
  // Runs a job to completion and returns its output lines.
  std::vector<std::string> run(const std::vector<std::string>& commands,
                               const std::map<std::string, std::string>& env) const {
    std::vector<std::string> arguments{GetParam()};
    arguments.insert(arguments.end(), commands.begin(), commands.end());
    MemberProcess member(program(), arguments, env);
    member.close_input();
    std::vector<std::string> lines;
    for (std::string line = member.read_line(); !line.empty(); line = member.read_line())
      lines.push_back(line);
    int status = member.wait();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "lane_member exited with status " << status;
    return lines;
  }
  uint64_t device_used() const {
    std::ifstream in(dir_.file("device"), std::ios::binary);
    uint64_t used = 0;
    in.read(reinterpret_cast<char*>(&used), sizeof used);
    return used;
  }
  std::unique_ptr<LaneSegment> ledger(const std::string& lane) const {
    std::string error;
    auto segment =
        LaneSegment::open_existing(LaneSegment::path_for_lane(dir_.path().string(), lane), &error);
    EXPECT_NE(segment, nullptr) << error;
    return segment;
  }

  test_support::TempDir dir_;
};

TEST_P(MemoryLaneTest, AllocationFailsExactlyAtTheCapWithoutTouchingTheDevice) {
  auto lines = run(
      {"alloc", "524288", "alloc", "524288", "alloc", "1", "free", "alloc", "524288", "alloc", "1"},
      lane_env("cap", kMiB));
  std::vector<std::string> expected{"alloc 524288 0", "alloc 524288 0", "alloc 1 2",
                                    "free 0",         "alloc 524288 0", "alloc 1 2"};
  EXPECT_EQ(lines, expected);
}

TEST_P(MemoryLaneTest, DeniedRequestNeverReachesTheDevice) {
  // The job ends holding 1 MiB (the stand-in device keeps what a process never freed); the 3 MiB
  // it was refused never reached the (16 MiB) device.
  auto lines = run({"alloc", std::to_string(kMiB), "alloc", std::to_string(3 * kMiB)},
                   lane_env("untouched", 2 * kMiB));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "alloc " + std::to_string(3 * kMiB) + " 2");
  EXPECT_EQ(device_used(), kMiB);
}

TEST_P(MemoryLaneTest, WithoutALaneTheSameRequestSucceeds) {
  auto lines = run({"alloc", std::to_string(3 * kMiB), "enforcing"}, device_env());
  std::vector<std::string> expected{"alloc " + std::to_string(3 * kMiB) + " 0", "enforcing absent"};
  EXPECT_EQ(lines, expected);
}

TEST_P(MemoryLaneTest, MemoryQueriesShowTheLane) {
  auto lines = run({"meminfo", "alloc", "262144", "meminfo", "nvml"}, lane_env("view", kMiB));
  std::vector<std::string> expected{"meminfo 0 1048576 1048576", "alloc 262144 0",
                                    "meminfo 0 786432 1048576", "nvml 0 786432 1048576 262144"};
  EXPECT_EQ(lines, expected);
}

TEST_P(MemoryLaneTest, PoolMemoryStaysChargedUntilTrimmed) {
  auto env = lane_env("pool", kMiB);
  auto lines = run({"async", "786432", "freeasync", "async", "524288", "freeasync", "ready", "trim",
                    "0", "ready"},
                   env);
  std::vector<std::string> expected{
      "async 786432 0", "freeasync 0", "async 524288 0", "freeasync 0", "ready", "trim 0", "ready"};
  EXPECT_EQ(lines, expected);
  EXPECT_EQ(device_used(), 0u);
}

TEST_P(MemoryLaneTest, FullLaneTrimsTheJobsOwnPoolBeforeRefusing) {
  // 768 KiB idle in the pool + 512 KiB new > 1 MiB: the library trims its pool and succeeds.
  auto lines = run({"async", "786432", "freeasync", "alloc", "524288", "alloc", "786432"},
                   lane_env("retry", kMiB));
  std::vector<std::string> expected{"async 786432 0", "freeasync 0", "alloc 524288 0",
                                    "alloc 786432 2"};
  EXPECT_EQ(lines, expected);
}

TEST_P(MemoryLaneTest, VirtualMemoryCreateIsCharged) {
  auto lines =
      run({"vmm", std::to_string(kMiB), "vmm", "1", "vmmrelease", "vmm", std::to_string(kMiB)},
          lane_env("vmm", kMiB));
  std::vector<std::string> expected{"vmm 1048576 0", "vmm 1 2", "vmmrelease 0", "vmm 1048576 0"};
  EXPECT_EQ(lines, expected);
}

TEST_P(MemoryLaneTest, PitchPaddingIsCharged) {
  // Rows of 1000 bytes are padded to 1024 by the stand-in: 100 rows cost 102,400 bytes.
  auto lines = run({"pitch", "1000", "100"}, lane_env("pitch", 102400));
  EXPECT_EQ(lines, std::vector<std::string>{"pitch 0 1024"});
  EXPECT_EQ(device_used(), 102400u);
  // 101 rows fit unpadded (101,000 bytes) but not padded (103,424): refused, and given back.
  auto lines_over = run({"pitch", "1000", "101"}, lane_env("pitch2", 102400));
  ASSERT_EQ(lines_over.size(), 1u);
  EXPECT_EQ(lines_over[0].substr(0, 8), "pitch 2 ");
  EXPECT_EQ(device_used(), 102400u);
}

TEST_P(MemoryLaneTest, LaneMatesShareTheCapAndNeighbourLanesAreUntouched) {
  std::string half = std::to_string(kMiB / 2), one = std::to_string(kMiB);
  MemberProcess first(program(),
                      {GetParam(), "alloc", std::to_string(3 * kMiB / 2), "ready", "wait"},
                      lane_env("shared", 2 * kMiB));
  ASSERT_EQ(first.read_line(), "alloc 1572864 0");
  ASSERT_EQ(first.read_line(), "ready");
  // The second member of the same lane gets only what is left.
  auto second = run({"alloc", one, "alloc", half}, lane_env("shared", 2 * kMiB));
  std::vector<std::string> expected{"alloc 1048576 2", "alloc 524288 0"};
  EXPECT_EQ(second, expected);
  // A job over its own lane is refused while a neighbour lane's job keeps allocating.
  auto greedy = run({"alloc", std::to_string(4 * kMiB)}, lane_env("greedy", 3 * kMiB));
  auto neighbour = run({"alloc", std::to_string(3 * kMiB)}, lane_env("neighbour", 3 * kMiB));
  EXPECT_EQ(greedy, std::vector<std::string>{"alloc 4194304 2"});
  EXPECT_EQ(neighbour, std::vector<std::string>{"alloc 3145728 0"});
  first.write_line("go");
  EXPECT_EQ(first.read_line(), "continued");
}

TEST_P(MemoryLaneTest, LedgerIsCorrectAfterAMemberIsKilled) {
  MemberProcess victim(program(), {GetParam(), "alloc", std::to_string(2 * kMiB), "ready", "wait"},
                       lane_env("killed", 2 * kMiB));
  ASSERT_EQ(victim.read_line(), "alloc 2097152 0");
  ASSERT_EQ(victim.read_line(), "ready");
  auto segment = ledger("killed");
  ASSERT_NE(segment, nullptr);
  EXPECT_EQ(segment->used(), 2 * kMiB);
  victim.kill(SIGKILL);
  victim.wait();
  // The killed member's slot is reclaimed when its room is needed: the next job gets all of it.
  MemberProcess next(program(), {GetParam(), "alloc", std::to_string(2 * kMiB), "ready", "wait"},
                     lane_env("killed", 2 * kMiB));
  ASSERT_EQ(next.read_line(), "alloc 2097152 0");
  ASSERT_EQ(next.read_line(), "ready");
  auto usage = segment->usage();
  EXPECT_EQ(usage.used_bytes, 2 * kMiB);
  EXPECT_EQ(usage.members, 1u);
  ASSERT_EQ(segment->members().size(), 1u);
  EXPECT_EQ(segment->members()[0].process.pid, next.pid());
  // A member that exits normally leaves the lane.
  next.write_line("go");
  EXPECT_EQ(next.read_line(), "continued");
  next.wait();
  EXPECT_EQ(segment->used(), 0u);
  EXPECT_EQ(segment->usage().members, 0u);
}

TEST_P(MemoryLaneTest, MalformedLaneSizeRefusesAllocations) {
  auto env = lane_env("bad", kMiB);
  env["FLEETSCOPE_LANE_BYTES"] = "lots";
  auto lines = run({"alloc", "1", "enforcing"}, env);
  std::vector<std::string> expected{"alloc 1 2", "enforcing 0"};
  EXPECT_EQ(lines, expected);
}

// A job that names a lane (and a size) without the daemon's grant gets no lane: no ledger is
// made and its device allocations are refused (the message on stderr: sharing_service_test).
TEST_P(MemoryLaneTest, AJobWithoutAGrantGetsNoLane) {
  auto env = device_env();
  env["LD_PRELOAD"] = FLEETSCOPE_LANES_LIBRARY;
  env["FLEETSCOPE_LANE_ID"] = "my-own-lane";
  env["FLEETSCOPE_LANE_BYTES"] = std::to_string(8 * kMiB);
  env["FLEETSCOPE_LANE_DIR"] = dir_.path().string();
  auto lines = run({"alloc", "1024", "enforcing"}, env);
  std::vector<std::string> expected{"alloc 1024 2", "enforcing 0"};
  EXPECT_EQ(lines, expected);
  EXPECT_EQ(device_used(), 0u);
  EXPECT_FALSE(
      std::filesystem::exists(LaneSegment::path_for_lane(dir_.path().string(), "my-own-lane")));
  // The same with a token for a lane nobody granted.
  env["FLEETSCOPE_LANE_TOKEN"] = test_support::kTestLaneToken;
  EXPECT_EQ(run({"alloc", "1024", "enforcing"}, env), expected);
  EXPECT_FALSE(
      std::filesystem::exists(LaneSegment::path_for_lane(dir_.path().string(), "my-own-lane")));
}

INSTANTIATE_TEST_SUITE_P(Paths, MemoryLaneTest, ::testing::Values("dlsym", "proc", "linked"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace fleetscope::lanes
