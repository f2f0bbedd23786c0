// The one wording of unusable input and output paths (common/file_errors.h).
#include "fleetscope/common/file_errors.h"

#include <gtest/gtest.h>

#include <fstream>

#include "temp_dir.h"

namespace fleetscope::common {
namespace {

TEST(FileErrors, InputProblemsSayWhatWasFoundAndWhatWasExpected) {
  test_support::TempDir dir;
  std::ofstream(dir.file("trace.json")) << "{}";
  EXPECT_EQ(input_problem(dir.file("trace.json"), "a trace"), std::nullopt);
  EXPECT_EQ(input_problem(dir.file("missing.db"), "a fleetscope database"),
            "no such file; expected a fleetscope database");
  EXPECT_EQ(input_problem(dir.path().string(), "a fleetscope database"),
            "it is a directory; expected a fleetscope database");
  EXPECT_EQ(cannot_read("x.db", "no such file"), "cannot read x.db: no such file");
}

TEST(FileErrors, OutputProblemsNameTheMissingFolder) {
  test_support::TempDir dir;
  EXPECT_EQ(output_problem(dir.file("out.db")), std::nullopt);
  EXPECT_EQ(output_problem(dir.file("no-such-folder/out.db")),
            "folder " + dir.file("no-such-folder") + " does not exist");
  EXPECT_EQ(output_problem(dir.path().string()), "it is a directory; expected a file name");
  std::ofstream(dir.file("plain")) << "x";
  EXPECT_EQ(output_problem(dir.file("plain/out.db")), dir.file("plain") + " is not a folder");
  EXPECT_EQ(output_problem("relative-name.db"), std::nullopt) << "the working directory";
  EXPECT_EQ(cannot_write("out/x.db", "folder out does not exist"),
            "cannot write out/x.db: folder out does not exist");
}

}  // namespace
}  // namespace fleetscope::common
