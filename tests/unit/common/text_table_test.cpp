// Aligned tables and names cut in the middle (common/text_table.h).
#include "fleetscope/common/text_table.h"

#include <gtest/gtest.h>

#include <sstream>

namespace fleetscope::common {
namespace {

TEST(CutMiddle, KeepsTextThatFitsAndBothEndsOfTextThatDoesNot) {
  EXPECT_EQ(cut_middle("resnet", 6), "resnet");
  EXPECT_EQ(cut_middle("resnet50-train-rank3", 11), "resne…rank3");
  EXPECT_EQ(display_width(cut_middle("resnet50-train-rank3", 11)), 11u);
  // Two names that differ only at the end stay different.
  EXPECT_NE(cut_middle("hta-critical_path_alexnet_trace", 20),
            cut_middle("hta-critical_path_simple_add_trace", 20));
  EXPECT_EQ(cut_middle("abc", 1), "…");
  EXPECT_EQ(cut_middle("abc", 0), "");
}

TEST(CutMiddle, NeverSplitsACodePoint) {
  const std::string text = "ééééééééé";  // 9 characters, 18 bytes
  EXPECT_EQ(display_width(text), 9u);
  EXPECT_EQ(cut_middle(text, 5), "éé…éé");
}

TEST(TextTable, ColumnWidthsComeFromTheContent) {
  TextTable table({{"JOB"}, {"GPU"}, {"SLOWDOWN", TextTable::Align::right}});
  table.add_row({"a-very-long-job-name", "0", "1.166"});
  table.add_row({"b", "12", "1.000"});
  std::ostringstream out;
  table.print(out);
  EXPECT_EQ(out.str(),
            "JOB                   GPU  SLOWDOWN\n"
            "a-very-long-job-name  0       1.166\n"
            "b                     12      1.000\n");
}

TEST(TextTable, LimitedColumnsAreCutInTheMiddleUnlessWide) {
  TextTable table({{"WORKFLOW", TextTable::Align::left, 12}, {"UTIL"}});
  table.add_row({"capture-2026-11-26-rank-0", "10 %"});
  table.add_row({"capture-2026-11-26-rank-1", "90 %"});
  table.add_note("  (note)");
  std::ostringstream narrow, wide;
  table.print(narrow);
  table.print(wide, /*wide=*/true);
  EXPECT_EQ(narrow.str(),
            "WORKFLOW      UTIL\n"
            "captu…rank-0  10 %\n"
            "captu…rank-1  90 %\n"
            "  (note)\n")
      << "(the cut keeps 12 characters: 5 + … + 6)";
  EXPECT_NE(wide.str().find("capture-2026-11-26-rank-1  90 %"), std::string::npos) << wide.str();
}

}  // namespace
}  // namespace fleetscope::common
