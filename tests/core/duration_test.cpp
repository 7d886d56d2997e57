// parse_duration and format_duration: accepted forms, rejections and round trips.
#include "core/duration.hpp"

#include <gtest/gtest.h>

#include <string>

namespace burrow {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

TEST(Duration, ParsesUnitsAndCombinations) {
  EXPECT_EQ(parse_duration("0"), 0ms);
  EXPECT_EQ(parse_duration("250ms"), 250ms);
  EXPECT_EQ(parse_duration("5s"), 5s);
  EXPECT_EQ(parse_duration("2m"), 2min);
  EXPECT_EQ(parse_duration("1h"), 1h);
  EXPECT_EQ(parse_duration("1h30m"), 90min);
  EXPECT_EQ(parse_duration("1d"), 24h);
  EXPECT_EQ(parse_duration("1d2h3m4s5ms"), 24h + 2h + 3min + 4s + 5ms);
  EXPECT_EQ(parse_duration("1m30s"), 90s);
  EXPECT_EQ(parse_duration("5s250ms"), 5250ms);
  EXPECT_EQ(parse_duration("0s"), 0ms);
  EXPECT_EQ(parse_duration("90"), 90s);  // plain integer = seconds
}

TEST(Duration, RejectsBadInput) {
  for (const char* bad :
       {"",     "-5s",   "+5s",  "5x",   "s",  "ms",  "1.5s",     " 5s",  "5s ",  "5 s", "30m1h",
        "1h1h", "1ms1s", "1s1m", "1h30", "5S", "1hh", "1m1ms1ms", "0x10", "5sms", "abc", "1e3"}) {
    EXPECT_FALSE(parse_duration(bad).has_value()) << bad;
  }
}

TEST(Duration, RejectsOverflowAndOverLongInput) {
  EXPECT_TRUE(parse_duration("36525d").has_value());  // 100 years is the cap
  EXPECT_FALSE(parse_duration("36526d").has_value());
  EXPECT_FALSE(parse_duration("36525d1ms").has_value());
  EXPECT_FALSE(parse_duration("99999999999999999999999999s").has_value());
  EXPECT_FALSE(parse_duration("18446744073709551616").has_value());
  EXPECT_FALSE(parse_duration("9223372036854775807ms").has_value());
  EXPECT_FALSE(parse_duration(std::string(65, '1') + "s").has_value());
  EXPECT_EQ(parse_duration(std::string(61, '0') + "1ms"), 1ms);  // exactly 64 chars
}

TEST(Duration, Formats) {
  EXPECT_EQ(format_duration(0ms), "0s");
  EXPECT_EQ(format_duration(250ms), "250ms");
  EXPECT_EQ(format_duration(5s), "5s");
  EXPECT_EQ(format_duration(90min), "1h30m");
  EXPECT_EQ(format_duration(24h), "1d");
  EXPECT_EQ(format_duration(5250ms), "5s250ms");
  EXPECT_EQ(format_duration(-1500ms), "-1s500ms");
  EXPECT_FALSE(format_duration(milliseconds::min()).empty());
}

TEST(Duration, FormatRoundTrips) {
  for (auto d : {0ms, 1ms, 999ms, 1000ms, 61'001ms, 3'600'000ms, 86'399'999ms, 90'061'001ms}) {
    EXPECT_EQ(parse_duration(format_duration(d)), d) << format_duration(d);
  }
}

}  // namespace
}  // namespace burrow
