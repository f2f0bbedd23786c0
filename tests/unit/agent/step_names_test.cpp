#include <gtest/gtest.h>

#include <map>

#include "fleetscope/agent/step_names.h"
#include "fleetscope/agent/window_config.h"

namespace fleetscope::agent {
namespace {

TEST(StepNames, DefaultsMatchProfilerStepAndStep) {
  StepNames names;
  auto numbered = names.match("ProfilerStep#12");
  ASSERT_TRUE(numbered.has_value());
  EXPECT_EQ(numbered->number, 12);
  EXPECT_TRUE(numbered->numbered_prefix);
  auto plain = names.match("step");
  ASSERT_TRUE(plain.has_value());
  EXPECT_FALSE(plain->number.has_value());
  EXPECT_FALSE(names.match("ProfilerStep#").has_value());
  EXPECT_FALSE(names.match("ProfilerStep#1x").has_value());
  EXPECT_FALSE(names.match("steps").has_value());
  EXPECT_FALSE(names.match("forward").has_value());
}

TEST(StepNames, ParseTrimsAndFallsBackToDefaults) {
  StepNames names = StepNames::parse(" iter#, train_step ,");
  EXPECT_EQ(names.names(), (std::vector<std::string>{"iter#", "train_step"}));
  EXPECT_EQ(names.match("iter#3")->number, 3);
  EXPECT_TRUE(names.match("train_step").has_value());
  EXPECT_FALSE(names.match("step").has_value());
  EXPECT_EQ(StepNames::parse("").names(), (std::vector<std::string>{"ProfilerStep#", "step"}));
}

TEST(WindowConfig, IdleWithoutOutput) {
  auto config = WindowConfig::from_env([](const char*) -> const char* { return nullptr; });
  EXPECT_FALSE(config.active);
  EXPECT_EQ(config.buffer_size_kb, 4096);  // Kineto's buffer size
}

TEST(WindowConfig, ReadsEveryVariable) {
  std::map<std::string, std::string> env = {{"FLEETSCOPE_OUTPUT", "/tmp/t-%p.db"},
                                            {"FLEETSCOPE_DELAY_MS", "250"},
                                            {"FLEETSCOPE_DURATION_MS", "1000"},
                                            {"FLEETSCOPE_ITERATIONS", "5"},
                                            {"FLEETSCOPE_STEP_NAMES", "it#"},
                                            {"FLEETSCOPE_BUFFER_SIZE_KB", "2048"},
                                            {"FLEETSCOPE_CUPTI_PATH", "/opt/libcupti.so"}};
  auto config = WindowConfig::from_env([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  EXPECT_TRUE(config.active);
  EXPECT_EQ(config.delay_ms, 250);
  EXPECT_EQ(config.duration_ms, 1000);
  EXPECT_EQ(config.iterations, 5);
  EXPECT_EQ(config.buffer_size_kb, 2048);
  EXPECT_EQ(config.cupti_path, "/opt/libcupti.so");
  EXPECT_TRUE(config.step_names.match("it#4").has_value());
  EXPECT_EQ(config.output_path(99), "/tmp/t-99.db");
  EXPECT_TRUE(config.problems.empty());
}

TEST(WindowConfig, PartDirWinsAndBadNumbersAreReported) {
  std::map<std::string, std::string> env = {{"FLEETSCOPE_PART_DIR", "/tmp/parts"},
                                            {"FLEETSCOPE_DELAY_MS", "soon"},
                                            {"FLEETSCOPE_BUFFER_SIZE_KB", "1"}};
  auto config = WindowConfig::from_env([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  EXPECT_TRUE(config.active);
  EXPECT_EQ(config.output_path(7), "/tmp/parts/part-7.db");
  EXPECT_EQ(config.delay_ms, 0);
  EXPECT_EQ(config.buffer_size_kb, 64);
  EXPECT_EQ(config.problems.size(), 2u);
}

TEST(WindowConfig, TraceZeroForcesIdle) {
  std::map<std::string, std::string> env = {{"FLEETSCOPE_OUTPUT", "x.db"},
                                            {"FLEETSCOPE_TRACE", "0"}};
  auto config = WindowConfig::from_env([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  EXPECT_FALSE(config.active);
}

}  // namespace
}  // namespace fleetscope::agent
