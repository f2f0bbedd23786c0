#include "fleetscope/analyzer/time_axis.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fleetscope::analyzer {
namespace {

bool nice(int64_t step) {
  while (step % 10 == 0) step /= 10;
  return step == 1 || step == 2 || step == 5;
}

TEST(TimeAxis, MapsLinearlyBothWays) {
  const TimeAxis axis{1'000, 2'000, 100.0, 600.0};  // 1000 ns onto 500 px: 2 ns per px
  EXPECT_DOUBLE_EQ(axis.to_pixel(1'000), 100.0);
  EXPECT_DOUBLE_EQ(axis.to_pixel(1'500), 350.0);
  EXPECT_DOUBLE_EQ(axis.to_pixel(2'000), 600.0);
  EXPECT_EQ(axis.to_time(100.0), 1'000);
  EXPECT_EQ(axis.to_time(350.0), 1'500);
  EXPECT_EQ(axis.to_time(600.0), 2'000);
  EXPECT_EQ(axis.to_time(100.2), 1'000);  // 0.4 ns rounds to the nearest ns
  EXPECT_EQ(axis.to_time(100.3), 1'001);
}

TEST(TimeAxis, RoundTrip) {
  const TimeAxis axis{1'700'000'000'123'456'789, 1'700'000'003'987'654'321, 48.0, 704.0};
  for (int64_t t = axis.begin_ns; t <= axis.end_ns; t += 123'456'789)
    EXPECT_EQ(axis.to_time(axis.to_pixel(t)), t);
  // Pixel → time → pixel is exact up to half a nanosecond's worth of pixels.
  const double px_per_ns = (axis.x1 - axis.x0) / double(axis.length_ns());
  for (double px = 48.0; px <= 704.0; px += 7.25)
    EXPECT_NEAR(axis.to_pixel(axis.to_time(px)), px, px_per_ns);
}

TEST(TimeAxis, ClampsOutsideTheRange) {
  const TimeAxis axis{0, 1'000, 10.0, 110.0};
  EXPECT_DOUBLE_EQ(axis.to_pixel(-500), 10.0);
  EXPECT_DOUBLE_EQ(axis.to_pixel(5'000), 110.0);
  EXPECT_EQ(axis.to_time(-3.0), 0);
  EXPECT_EQ(axis.to_time(1e9), 1'000);
  EXPECT_EQ(axis.to_time(std::nan("")), 0);
}

TEST(TimeAxis, DegenerateRanges) {
  const TimeAxis zero{500, 500, 10.0, 110.0};  // zero-length
  EXPECT_TRUE(zero.degenerate());
  EXPECT_DOUBLE_EQ(zero.to_pixel(500), 10.0);
  EXPECT_DOUBLE_EQ(zero.to_pixel(900), 10.0);
  EXPECT_EQ(zero.to_time(60.0), 500);
  EXPECT_TRUE(zero.ticks(8).empty());
  EXPECT_EQ(zero.tick_step(8), 0);

  const TimeAxis reversed{900, 500, 10.0, 110.0};  // empty: end before begin
  EXPECT_TRUE(reversed.degenerate());
  EXPECT_EQ(reversed.length_ns(), 0);
  EXPECT_DOUBLE_EQ(reversed.to_pixel(700), 10.0);
  EXPECT_EQ(reversed.to_time(60.0), 900);
  EXPECT_TRUE(reversed.ticks(8).empty());

  const TimeAxis no_pixels{0, 1'000, 50.0, 50.0};  // zero pixel width
  EXPECT_DOUBLE_EQ(no_pixels.to_pixel(700), 50.0);
  EXPECT_EQ(no_pixels.to_time(50.0), 0);

  const TimeAxis ok{0, 1'000, 0.0, 100.0};
  EXPECT_TRUE(ok.ticks(0).empty());
  EXPECT_TRUE(ok.ticks(-3).empty());
}

TEST(TimeAxis, TicksAreNiceAndWithinTheCountBounds) {
  for (int64_t len : {int64_t{1}, int64_t{7}, int64_t{999}, int64_t{1'000}, int64_t{12'345},
                      int64_t{250'000}, int64_t{3'000'001}, int64_t{98'765'432'100}}) {
    for (int max_count : {1, 2, 3, 5, 8, 10, 20}) {
      const TimeAxis axis{10'000, 10'000 + len, 0.0, 720.0};
      const auto ticks = axis.ticks(max_count);
      const int64_t step = axis.tick_step(max_count);
      SCOPED_TRACE("len " + std::to_string(len) + " max " + std::to_string(max_count));
      ASSERT_FALSE(ticks.empty());
      EXPECT_LE(ticks.size(), size_t(max_count));
      EXPECT_TRUE(nice(step)) << step;
      // The smallest nice step: the next smaller one would give too many ticks, so there are
      // more than max_count / 2.5 ticks (or every ns has one).
      if (step > 1) {
        EXPECT_GT(double(ticks.size()), double(max_count) / 2.5);
      }
      EXPECT_EQ(ticks.front().ns, axis.begin_ns);
      EXPECT_DOUBLE_EQ(ticks.front().px, 0.0);
      for (size_t i = 1; i < ticks.size(); ++i) {
        EXPECT_EQ(ticks[i].ns - ticks[i - 1].ns, step);
        EXPECT_GT(ticks[i].px, ticks[i - 1].px);
      }
      EXPECT_LE(ticks.back().ns, axis.end_ns);
      EXPECT_GT(ticks.back().ns + step, axis.end_ns);  // no room for one more
    }
  }
}

TEST(TimeAxis, TickStepExamples) {
  EXPECT_EQ((TimeAxis{0, 1'000, 0, 1}.tick_step(11)), 100);  // 0, 100, ..., 1000
  EXPECT_EQ((TimeAxis{0, 1'000, 0, 1}.tick_step(10)), 200);  // 100 would give 11
  EXPECT_EQ((TimeAxis{0, 2'500'000, 0, 1}.tick_step(8)), 500'000);
  EXPECT_EQ((TimeAxis{0, 3, 0, 1}.tick_step(10)), 1);
  EXPECT_EQ((TimeAxis{0, 3, 0, 1}.tick_step(1)), 5);  // one tick: a step longer than the range
}

TEST(TimeAxis, LabelUnitsFollowTheRange) {
  EXPECT_EQ((TimeAxis{0, 999, 0, 1}.unit()), TimeUnit::ns);
  EXPECT_EQ((TimeAxis{0, 1'000, 0, 1}.unit()), TimeUnit::us);
  EXPECT_EQ((TimeAxis{0, 999'999, 0, 1}.unit()), TimeUnit::us);
  EXPECT_EQ((TimeAxis{0, 1'000'000, 0, 1}.unit()), TimeUnit::ms);
  EXPECT_EQ((TimeAxis{0, 1'000'000'000, 0, 1}.unit()), TimeUnit::s);
  EXPECT_STREQ(time_unit_suffix(TimeUnit::us), "\xC2\xB5s");

  auto labels = [](const TimeAxis& axis, int n) {
    std::vector<std::string> out;
    for (const auto& t : axis.ticks(n)) out.push_back(t.label);
    return out;
  };
  // 2.5 ms in 500 µs steps, in ms, relative to the start.
  EXPECT_EQ(labels(TimeAxis{7'000'000'000, 7'002'500'000, 0, 720}, 8),
            (std::vector<std::string>{"0 ms", "0.5 ms", "1 ms", "1.5 ms", "2 ms", "2.5 ms"}));
  EXPECT_EQ(labels(TimeAxis{0, 800, 0, 720}, 5),
            (std::vector<std::string>{"0 ns", "200 ns", "400 ns", "600 ns", "800 ns"}));
  EXPECT_EQ(labels(TimeAxis{100, 100 + 45'000, 0, 720}, 6),
            (std::vector<std::string>{"0 \xC2\xB5s", "10 \xC2\xB5s", "20 \xC2\xB5s", "30 \xC2\xB5s",
                                      "40 \xC2\xB5s"}));
  EXPECT_EQ(labels(TimeAxis{0, 3'200'000'000, 0, 720}, 8),
            (std::vector<std::string>{"0 s", "0.5 s", "1 s", "1.5 s", "2 s", "2.5 s", "3 s"}));
  // Steps well below the unit get the decimals they need.
  EXPECT_EQ(labels(TimeAxis{0, 1'040'000, 0, 720}, 3),
            (std::vector<std::string>{"0 ms", "0.5 ms", "1 ms"}));
  EXPECT_EQ(labels(TimeAxis{0, 1'000'000, 0, 720}, 60)[1], "0.02 ms");
}

}  // namespace
}  // namespace fleetscope::analyzer
