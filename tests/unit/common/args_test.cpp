// The shared command-line parser: integer bounds are enforced where options are parsed.
#include "fleetscope/common/args.h"
#include "fleetscope/common/capture_choice.h"

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

// An option that takes one value, given twice with different values, is a usage error: the last
// one silently won, so `diff a.db --capture 9 b.db --capture 11` compared capture 11 with itself
// (every ratio 1.000). The same value twice is harmless; a list option takes every value.
TEST(ArgParser, ASingleValueOptionGivenTwiceDifferentlyIsAUsageError) {
  std::string capture;
  double slowdown = 1;
  std::vector<std::string> names, files;
  auto parse = [&](const std::vector<std::string>& args, std::string& err) {
    capture.clear();
    names.clear();
    ArgParser parser("t [--capture ID] [--max X] [--name N]", "test");
    parser.option("--capture", "ID", "capture", &capture)
        .option("--max", "X", "bound", &slowdown)
        .list("--name", "N", "names", &names)
        .positionals("DB...", "files", &files);
    std::ostringstream out, e;
    auto code = parser.parse(args, out, e);
    err = e.str();
    return code;
  };
  std::string err;
  auto code = parse({"a.db", "--capture", "9", "b.db", "--capture=11"}, err);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 2);
  EXPECT_NE(err.find("error: option '--capture' given twice ('9', then '11'): give it once"),
            std::string::npos)
      << err;
  code = parse({"--max", "1.2", "--max", "1.5"}, err);
  ASSERT_TRUE(code.has_value());
  EXPECT_NE(err.find("option '--max' given twice ('1.2', then '1.5')"), std::string::npos) << err;

  EXPECT_FALSE(parse({"--capture", "9", "--capture", "9"}, err).has_value()) << err;
  EXPECT_EQ(capture, "9");
  EXPECT_FALSE(parse({"--name", "a", "--name", "b"}, err).has_value()) << err;
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace fleetscope::common

namespace fleetscope::common {
namespace {

// An empty value (`--capture=`, or `--capture "$ID"` with ID unset) was taken as the option not
// given: `info --capture=` showed every capture. It is a usage error naming the option.
TEST(ArgParser, AnEmptyValueIsAUsageError) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--capture="}, std::vector<std::string>{"--capture", ""}}) {
    std::string capture = "unchanged";
    ArgParser parser("t [--capture ID|all]", "test");
    parser.option("--capture", "ID|all", "which", &capture);
    std::ostringstream out, err;
    EXPECT_EQ(parser.parse(args, out, err), 2);
    EXPECT_EQ(
        err.str().rfind("error: option '--capture' needs a value (ID|all), got an empty one", 0),
        0u)
        << err.str();
    EXPECT_EQ(capture, "unchanged");
  }
  const Parsed top = parse_top({"--top="});
  EXPECT_EQ(top.code, 2);
  EXPECT_NE(top.err.find("option '--top' needs a value (N), got an empty one"), std::string::npos)
      << top.err;
}

// `--capture 99999999999999999999` was taken as 9223372036854775807 (strtoll saturates) and
// reported as "no capture with id 9223372036854775807": an id past int64 is a usage error naming
// what was typed.
TEST(CaptureChoice, AnIdPastInt64IsRefusedAsTyped) {
  EXPECT_EQ(parse_capture_choice("9223372036854775807").id, INT64_MAX);
  try {
    parse_capture_choice("99999999999999999999");
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "--capture expects a capture id (see `fleetscope info`) or 'all', got "
              "'99999999999999999999'");
  }
}

}  // namespace
}  // namespace fleetscope::common
