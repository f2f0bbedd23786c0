#include "fleetscope/lanes/lane_environment.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace fleetscope::lanes {
namespace {

TEST(LaneEnvironment, ParsesByteSizesWithBinaryUnits) {
  EXPECT_EQ(parse_byte_size("123"), 123u);
  EXPECT_EQ(parse_byte_size("64MiB"), 64ull << 20);
  EXPECT_EQ(parse_byte_size("2G"), 2ull << 30);
  EXPECT_EQ(parse_byte_size("1.5GiB"), 3ull << 29);
  EXPECT_EQ(parse_byte_size("4k"), 4096u);
  EXPECT_FALSE(parse_byte_size(""));
  EXPECT_FALSE(parse_byte_size("-1"));
  EXPECT_FALSE(parse_byte_size("12 GB"));
  EXPECT_FALSE(parse_byte_size("1.5"));
  EXPECT_FALSE(parse_byte_size("lots"));
  EXPECT_FALSE(parse_byte_size("99999999999T"));
}

TEST(LaneEnvironment, InterpositionEnvironmentPutsTheLibraryFirst) {
  LaneAssignment assignment;
  assignment.lane_id = "gpu0-l1";
  assignment.lane_bytes = 1 << 20;
  assignment.gate_socket = "/run/fleetscope/gate.sock";
  assignment.priority = 2;
  Environment env =
      interposition_environment(assignment, "/opt/lib/libfleetscope_lanes.so", "/other.so");
  Environment expected{{"LD_PRELOAD", "/opt/lib/libfleetscope_lanes.so:/other.so"},
                       {"FLEETSCOPE_LANE_ID", "gpu0-l1"},
                       {"FLEETSCOPE_LANE_BYTES", "1048576"},
                       {"FLEETSCOPE_GATE_SOCKET", "/run/fleetscope/gate.sock"},
                       {"FLEETSCOPE_JOB_PRIORITY", "2"}};
  EXPECT_EQ(env, expected);
}

class EnvironmentVariables : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* name :
         {kLaneIdVariable, kLaneBytesVariable, kJobPriorityVariable, kJobStepsVariable}) {
      ::unsetenv(name);
    }
  }
};

TEST_F(EnvironmentVariables, AssignmentRoundTripsThroughTheEnvironment) {
  std::string error;
  EXPECT_FALSE(assignment_from_environment(&error));
  EXPECT_TRUE(error.empty());
  ::setenv(kLaneIdVariable, "lane7", 1);
  ::setenv(kLaneBytesVariable, "8GiB", 1);
  ::setenv(kJobPriorityVariable, "-3", 1);
  ::setenv(kJobStepsVariable, "1000", 1);
  auto assignment = assignment_from_environment(&error);
  ASSERT_TRUE(assignment) << error;
  EXPECT_EQ(assignment->lane_id, "lane7");
  EXPECT_EQ(assignment->lane_bytes, 8ull << 30);
  EXPECT_EQ(assignment->priority, -3);
  EXPECT_EQ(assignment->total_steps, 1000u);
}

TEST_F(EnvironmentVariables, MalformedValuesNameTheVariableAndTheValue) {
  std::string error;
  ::setenv(kLaneIdVariable, "lane/../x", 1);
  EXPECT_FALSE(assignment_from_environment(&error));
  EXPECT_NE(error.find("FLEETSCOPE_LANE_ID='lane/../x'"), std::string::npos) << error;
  ::setenv(kLaneIdVariable, "ok", 1);
  ::setenv(kLaneBytesVariable, "12 parsecs", 1);
  EXPECT_FALSE(assignment_from_environment(&error));
  EXPECT_NE(error.find("FLEETSCOPE_LANE_BYTES='12 parsecs'"), std::string::npos) << error;
  ::unsetenv(kLaneBytesVariable);
  ::setenv(kJobPriorityVariable, "high", 1);
  EXPECT_FALSE(assignment_from_environment(&error));
  EXPECT_NE(error.find("FLEETSCOPE_JOB_PRIORITY='high'"), std::string::npos) << error;
}

TEST(MpsEnvironment, PinnedLimitIsRoundedDownToWholeMebibytes) {
  MpsClientLimits limits;
  limits.device_ordinal = 0;
  limits.pinned_memory_bytes = (3ull << 30) + 123;
  limits.active_thread_percentage = 40;
  limits.pipe_directory = "/run/mps";
  std::string error;
  Environment expected{{"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=3072M"},
                       {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "40"},
                       {"CUDA_MPS_PIPE_DIRECTORY", "/run/mps"}};
  EXPECT_EQ(mps_client_environment(limits, &error), expected);
}

TEST(MpsEnvironment, RejectsLimitsMpsCannotExpress) {
  std::string error;
  MpsClientLimits limits;
  limits.active_thread_percentage = 0;
  EXPECT_TRUE(mps_client_environment(limits, &error).empty());
  EXPECT_NE(error.find("active thread percentage 0"), std::string::npos);
  limits.active_thread_percentage = 50;
  limits.pinned_memory_bytes = 1000;
  EXPECT_TRUE(mps_client_environment(limits, &error).empty());
  EXPECT_NE(error.find("at least 1 MiB"), std::string::npos);
  limits.pinned_memory_bytes = 0;
  Environment expected{{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "50"}};
  EXPECT_EQ(mps_client_environment(limits, &error), expected);
}

}  // namespace
}  // namespace fleetscope::lanes
