#include "fleetscope/export/json_text.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

namespace fleetscope::exporter {
namespace {

std::string microseconds(int64_t ns) {
  std::string out;
  append_microseconds(out, ns);
  return out;
}
std::string escaped(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

TEST(Microseconds, ThreeDecimalsFromIntegerNanoseconds) {
  EXPECT_EQ(microseconds(0), "0.000");
  EXPECT_EQ(microseconds(7), "0.007");
  EXPECT_EQ(microseconds(999), "0.999");
  EXPECT_EQ(microseconds(1000), "1.000");
  EXPECT_EQ(microseconds(123'456), "123.456");
  EXPECT_EQ(microseconds(-1'500), "-1.500");
  // A value a double cannot hold to the ns: the integer path keeps every digit.
  EXPECT_EQ(microseconds(1'700'000'000'123'456'789), "1700000000123456.789");
  EXPECT_EQ(microseconds(std::numeric_limits<int64_t>::min()), "-9223372036854775.808");
}

TEST(JsonString, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(escaped("plain"), R"("plain")");
  EXPECT_EQ(escaped("a\nb\tc\x01"
                    "d\"e\\f\r\b\f\x1f"),
            R"("a\nb\tc\u0001d\"e\\f\r\b\f\u001f")");
  EXPECT_EQ(escaped(std::string_view("nul\0byte", 8)), R"("nul\u0000byte")");
}

TEST(JsonString, KeepsValidUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(escaped("µs → ✓ 🚀"), "\"µs → ✓ 🚀\"");
  // A lone continuation byte, a truncated sequence and an overlong encoding.
  const std::string bad =
      "a\x80"
      "b\xE2\x82"
      "c\xC0\xAF";
  const std::string text = escaped(bad);
  EXPECT_EQ(text,
            "\"a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD\xEF\xBF\xBD"
            "c\xEF\xBF\xBD\xEF\xBF\xBD\"");
  EXPECT_TRUE(nlohmann::json::accept(text));
}

TEST(JsonString, RoundTripsThroughAParser) {
  std::string every_byte;
  for (int c = 1; c < 128; ++c) every_byte.push_back(static_cast<char>(c));
  EXPECT_EQ(nlohmann::json::parse(escaped(every_byte)).get<std::string>(), every_byte);
}

TEST(JsonNumbers, DoublesAreShortestAndNonFiniteIsNull) {
  std::string out;
  append_double(out, 0.1);
  out += ' ';
  append_double(out, 87.5);
  out += ' ';
  append_double(out, std::numeric_limits<double>::quiet_NaN());
  out += ' ';
  append_integer(out, -42);
  EXPECT_EQ(out, "0.1 87.5 null -42");
}

}  // namespace
}  // namespace fleetscope::exporter
