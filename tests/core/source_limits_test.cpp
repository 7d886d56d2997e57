// Per-source admission: open connections, the rate and its burst, address grouping, leases.
#include "core/source_limits.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace burrow {
namespace {

using namespace std::chrono_literals;
using boost::asio::ip::make_address;
using verdict = source_limits::verdict;

TEST(source_limits, OpenConnectionsAreCappedPerSourceAndFreedByTheLease) {
  source_limits limits({.max_open = 3, .rate = 0, .burst = 0});
  auto a = make_address("192.0.2.1");
  std::vector<source_limits::lease> held;
  for (int i = 0; i < 3; ++i) {
    auto d = limits.admit(a);
    ASSERT_EQ(d.result, verdict::admitted);
    held.push_back(d.held);
  }
  EXPECT_EQ(limits.admit(a).result, verdict::too_many_open);
  // Another address is not affected.
  EXPECT_EQ(limits.admit(make_address("192.0.2.2")).result, verdict::admitted);
  held.pop_back();  // one connection closes
  EXPECT_EQ(limits.admit(a).result, verdict::admitted);
}

TEST(source_limits, RateAllowsABurstThenRefillsOverTime) {
  source_limits limits({.max_open = 0, .rate = 10, .burst = 5});
  auto a = make_address("198.51.100.7");
  auto t = source_limits::clock::now();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(limits.admit(a, t).result, verdict::admitted) << i;
  EXPECT_EQ(limits.admit(a, t).result, verdict::too_fast);
  EXPECT_EQ(limits.admit(a, t + 50ms).result, verdict::too_fast);   // half a token
  EXPECT_EQ(limits.admit(a, t + 110ms).result, verdict::admitted);  // one more token
  EXPECT_EQ(limits.admit(a, t + 110ms).result, verdict::too_fast);
  // A long pause refills up to the burst, not beyond it.
  auto later = t + 10s;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(limits.admit(a, later).result, verdict::admitted) << i;
  EXPECT_EQ(limits.admit(a, later).result, verdict::too_fast);
}

TEST(source_limits, Ipv6CountsPerSlash64AndMappedIpv4AsIpv4) {
  source_limits limits({.max_open = 1, .rate = 0, .burst = 0});
  auto first = limits.admit(make_address("2001:db8:1:2::1"));
  ASSERT_EQ(first.result, verdict::admitted);
  EXPECT_EQ(limits.admit(make_address("2001:db8:1:2:ffff::9")).result, verdict::too_many_open);
  EXPECT_EQ(limits.admit(make_address("2001:db8:1:3::1")).result, verdict::admitted);

  auto v4 = limits.admit(make_address("203.0.113.5"));
  ASSERT_EQ(v4.result, verdict::admitted);
  EXPECT_EQ(limits.admit(make_address("::ffff:203.0.113.5")).result, verdict::too_many_open);
}

TEST(source_limits, ZeroTurnsEachLimitOff) {
  source_limits limits({.max_open = 0, .rate = 0, .burst = 0});
  auto a = make_address("127.0.0.1");
  std::vector<source_limits::lease> held;
  for (int i = 0; i < 10000; ++i) {
    auto d = limits.admit(a);
    ASSERT_EQ(d.result, verdict::admitted);
    held.push_back(d.held);
  }
  EXPECT_EQ(limits.tracked(), 0u);
}

TEST(source_limits, SweepForgetsQuietSourcesOnly) {
  source_limits limits({.max_open = 10, .rate = 100, .burst = 10});
  auto t = source_limits::clock::now();
  auto kept = limits.admit(make_address("192.0.2.1"), t);
  { auto gone = limits.admit(make_address("192.0.2.2"), t); }
  EXPECT_EQ(limits.tracked(), 2u);
  EXPECT_EQ(limits.sweep(t), 2u);  // 192.0.2.2's bucket is not full yet
  EXPECT_EQ(limits.sweep(t + 1s), 1u);
  kept = {};
  EXPECT_EQ(limits.sweep(t + 2s), 0u);
}

TEST(source_limits, ReconfiguringKeepsOpenConnectionsCounted) {
  source_limits limits({.max_open = 2, .rate = 0, .burst = 0});
  auto a = make_address("192.0.2.9");
  auto one = limits.admit(a);
  auto two = limits.admit(a);
  limits.configure({.max_open = 1, .rate = 0, .burst = 0});
  EXPECT_EQ(limits.admit(a).result, verdict::too_many_open);
  limits.configure({.max_open = 3, .rate = 0, .burst = 0});
  EXPECT_EQ(limits.admit(a).result, verdict::admitted);
}

}  // namespace
}  // namespace burrow
