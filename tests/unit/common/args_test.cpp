// The shared command-line parser: integer bounds are enforced where options are parsed.
#include "fleetscope/common/args.h"

#include <gtest/gtest.h>

#include <sstream>

namespace fleetscope::common {
namespace {

struct Parsed {
  std::optional<int> code;
  int64_t top = 20;
  std::string err;
};

Parsed parse_top(const std::vector<std::string>& args) {
  Parsed p;
  ArgParser parser("t [--top N]", "test");
  parser.option("--top", "N", "how many", &p.top, 0);
  std::ostringstream out, err;
  p.code = parser.parse(args, out, err);
  p.err = err.str();
  return p;
}

TEST(ArgParser, IntegerAtItsLowerBoundIsTaken) {
  const auto p = parse_top({"--top", "0"});
  EXPECT_FALSE(p.code.has_value());
  EXPECT_EQ(p.top, 0);
}

TEST(ArgParser, IntegerBelowItsLowerBoundIsAUsageError) {
  const auto p = parse_top({"--top", "-1"});
  ASSERT_TRUE(p.code.has_value());
  EXPECT_EQ(*p.code, 2);
  EXPECT_NE(p.err.find("option '--top' expects N >= 0, got -1"), std::string::npos) << p.err;
  EXPECT_EQ(p.top, 20);
}

TEST(ArgParser, IntegerOutOfRangeIsAUsageError) {
  const auto p = parse_top({"--top=99999999999999999999"});
  ASSERT_TRUE(p.code.has_value());
  EXPECT_NE(p.err.find("expects an integer"), std::string::npos) << p.err;
}

}  // namespace
}  // namespace fleetscope::common
