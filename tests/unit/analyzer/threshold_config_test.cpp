// Threshold overrides from a config file: both spellings, comments, and errors that name the file
// and the line.
#include "fleetscope/analyzer/threshold_config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <sstream>

#include "fleetscope/store/error.h"
#include "temp_dir.h"

namespace fleetscope::analyzer {
namespace {

ThresholdOverrides parse(const std::string& text) {
  std::istringstream in(text);
  return parse_threshold_config(in, "team.conf");
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ThresholdConfig, DottedNamesSectionsAndComments) {
  auto overrides = parse(
      "# our cluster's defaults\n"
      "gpu_idle_gaps.min_gap_ns = 200e6\n"
      "\n"
      "[low_gpu_utilization]   # profiler-plugin utilization\n"
      "min_utilization = 0.4\n"
      "few_blocks.max_share=0.2\n");
  ASSERT_EQ(overrides.size(), 3u);
  EXPECT_EQ(overrides.at("gpu_idle_gaps.min_gap_ns"), 200e6);
  EXPECT_EQ(overrides.at("low_gpu_utilization.min_utilization"), 0.4);
  EXPECT_EQ(overrides.at("few_blocks.max_share"), 0.2);
}

TEST(ThresholdConfig, ErrorsNameTheFileTheLineAndWhatWasExpected) {
  EXPECT_EQ(error_of("gpu_idle_gaps.min_gap_ns = 1\nno_such_rule.x = 1\n"),
            "team.conf: line 2: unknown rule 'no_such_rule' (see fleetscope analyze --list-rules)");
  EXPECT_EQ(error_of("gpu_idle_gaps.min_gap = 1\n"),
            "team.conf: line 1: rule gpu_idle_gaps has no threshold 'min_gap' (it has: "
            "min_gap_ns)");
  EXPECT_EQ(error_of("\n\ngpu_idle_gaps.min_gap_ns = ten\n"),
            "team.conf: line 3: expected a number after '=', got 'ten'");
  EXPECT_EQ(error_of("min_gap_ns = 1\n"),
            "team.conf: line 1: 'min_gap_ns' names no rule: write RULE.min_gap_ns or put it "
            "under [RULE]");
  EXPECT_EQ(error_of("[gpu_idle_gaps\n"),
            "team.conf: line 1: expected '[RULE]', got '[gpu_idle_gaps'");
  EXPECT_NE(error_of("gpu_idle_gaps min_gap_ns 1\n").find("line 1: expected 'RULE.THRESHOLD"),
            std::string::npos);
}

TEST(ThresholdConfig, MissingFileIsAnInputError) {
  EXPECT_THROW(read_threshold_config("/nonexistent/fleetscope.conf"), InputError);
}

// `analyze --config FIFO` waited for a writer for ever; `--config DIR` read as an empty config and
// changed nothing without a word. Both are named, in the one wording of common/file_errors.h.
TEST(ThresholdConfig, AFifoOrADirectoryIsNamedNotRead) {
  test_support::TempDir dir;
  const std::string fifo = dir.file("team.conf");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const auto& [path, problem] :
       {std::pair{fifo, std::string("not a regular file")},
        std::pair{dir.path().string(), std::string("it is a directory")}}) {
    try {
      read_threshold_config(path);
      ADD_FAILURE() << "accepted " << path;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()),
                "cannot read " + path + ": " + problem +
                    "; expected a threshold config file (RULE.THRESHOLD = VALUE)");
    }
  }
}

}  // namespace
}  // namespace fleetscope::analyzer
