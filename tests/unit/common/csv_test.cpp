// csv_field: RFC 4180 quoting of one CSV cell (common/csv.h).
#include "fleetscope/common/csv.h"

#include <gtest/gtest.h>

namespace fleetscope::common {
namespace {

TEST(CsvField, PlainValuesStayAsTheyAre) {
  EXPECT_EQ(csv_field("resnet-a"), "resnet-a");
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("a b;c\t"), "a b;c\t");
}

TEST(CsvField, SeparatorsQuotesAndLineBreaksAreQuoted) {
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field("cr\r"), "\"cr\r\"");
}

}  // namespace
}  // namespace fleetscope::common
