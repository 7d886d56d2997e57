// Token scopes: glob patterns, port spans, bandwidth rates and the ranges a token may pick from.
#include "relay/token_scope.hpp"

#include <gtest/gtest.h>

namespace burrow::relay {
namespace {

TEST(glob_match, StarMatchesAnyRunIncludingNone) {
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("*", "anything"));
  EXPECT_TRUE(glob_match("ci-*", "ci-"));
  EXPECT_TRUE(glob_match("ci-*", "ci-build-7"));
  EXPECT_FALSE(glob_match("ci-*", "cd-build"));
  EXPECT_FALSE(glob_match("ci-*", "xci-build"));
  EXPECT_TRUE(glob_match("*-web", "team-a-web"));
  EXPECT_TRUE(glob_match("a*b*c", "aXXbYYc"));
  EXPECT_FALSE(glob_match("a*b*c", "aXXbYY"));
  EXPECT_TRUE(glob_match("exact", "exact"));
  EXPECT_FALSE(glob_match("exact", "exactly"));
  EXPECT_FALSE(glob_match("", "x"));
}

TEST(glob_match, ManyStarsStayFast) {
  std::string pattern(60, '*');
  pattern += "b";
  std::string name(4000, 'a');
  EXPECT_FALSE(glob_match(pattern, name));  // linear, not exponential: returns at once
}

TEST(name_pattern, Validity) {
  EXPECT_TRUE(valid_name_pattern("ci-*"));
  EXPECT_TRUE(valid_name_pattern("*"));
  EXPECT_FALSE(valid_name_pattern(""));
  EXPECT_FALSE(valid_name_pattern("CI-*"));
  EXPECT_FALSE(valid_name_pattern("a b"));
  EXPECT_FALSE(valid_name_pattern(std::string(64, 'a')));
}

TEST(port_span, ParsesRangesAndSinglePorts) {
  auto r = parse_port_span("20000-20099");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 20000);
  EXPECT_EQ(r->last, 20099);
  auto one = parse_port_span("8080");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->first, 8080);
  EXPECT_EQ(one->last, 8080);
  EXPECT_FALSE(parse_port_span("0"));
  EXPECT_FALSE(parse_port_span("20099-20000"));
  EXPECT_FALSE(parse_port_span("70000"));
  EXPECT_FALSE(parse_port_span("a-b"));
  EXPECT_EQ(format_port_span(*r), "20000-20099");
  EXPECT_EQ(format_port_span(*one), "8080");
}

TEST(rate, ParsesSuffixesAndRoundTrips) {
  EXPECT_EQ(parse_rate("0"), 0u);
  EXPECT_EQ(parse_rate("500000"), 500000u);
  EXPECT_EQ(parse_rate("800k"), 800000u);
  EXPECT_EQ(parse_rate("10M"), 10000000u);
  EXPECT_EQ(parse_rate("10MB/s"), 10000000u);
  EXPECT_EQ(parse_rate("1G/s"), 1000000000u);
  EXPECT_EQ(parse_rate("1000G"), 1000000000000u);
  EXPECT_FALSE(parse_rate(""));
  EXPECT_FALSE(parse_rate("M"));
  EXPECT_FALSE(parse_rate("10 M"));
  EXPECT_FALSE(parse_rate("10T"));
  EXPECT_FALSE(parse_rate("-1"));
  EXPECT_FALSE(parse_rate("1001G"));
  EXPECT_FALSE(parse_rate("99999999999999999999999"));
  for (std::uint64_t v : {0ull, 1ull, 999ull, 1000ull, 1500000ull, 2000000000ull, 1234567ull})
    EXPECT_EQ(parse_rate(format_rate(v)), v) << format_rate(v);
}

TEST(token_scope, NamesAndPorts) {
  token_scope s;
  EXPECT_TRUE(s.allows_name("anything"));
  EXPECT_TRUE(s.allows_port(1));
  s.names = {"ci-*", "docs"};
  s.ports = {{20000, 20009}, {20100, 20100}};
  EXPECT_TRUE(s.allows_name("ci-web"));
  EXPECT_TRUE(s.allows_name("docs"));
  EXPECT_FALSE(s.allows_name("docs2"));
  EXPECT_TRUE(s.allows_port(20005));
  EXPECT_TRUE(s.allows_port(20100));
  EXPECT_FALSE(s.allows_port(20010));
}

TEST(token_scope, AllowedRangesAreCutToTheRelays) {
  token_scope s;
  EXPECT_FALSE(allowed_ranges(s, {20000, 29999}));  // no ports set: the relay's range
  s.ports = {{19990, 20010}, {30000, 30010}};
  auto r = allowed_ranges(s, {20000, 29999});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].first, 20000);
  EXPECT_EQ((*r)[0].last, 20010);
  s.ports = {{30000, 30010}};
  r = allowed_ranges(s, {20000, 29999});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->empty());  // nothing in common: nothing may be claimed
  r = allowed_ranges(s, {0, 0});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->size(), 1u);  // a relay that hands out any port: the token's ranges as they are
}

}  // namespace
}  // namespace burrow::relay
