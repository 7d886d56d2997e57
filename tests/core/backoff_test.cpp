// backoff: delay bounds per attempt, cap, reset and seeding.
#include "core/backoff.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace burrow {
namespace {

using namespace std::chrono_literals;

TEST(Backoff, ScheduleStaysWithinBoundsFor50Attempts) {
  backoff b(100ms, 5s, 42);
  for (int n = 0; n < 50; ++n) {
    const auto base = n < 6 ? std::min<std::chrono::milliseconds>(5s, 100ms * (1 << n)) : 5000ms;
    const auto d = b.next();
    EXPECT_GE(d, base / 2) << n;
    EXPECT_LE(d, base) << n;
    EXPECT_EQ(b.attempts(), n + 1);
  }
}

TEST(Backoff, FirstDelayIsWithinFirst) {
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    backoff b(100ms, 5s, seed);
    const auto d = b.next();
    EXPECT_LE(d, 100ms);
    EXPECT_GE(d, 50ms);
  }
  backoff unseeded;  // defaults: 100 ms first, random seed
  EXPECT_LE(unseeded.next(), 100ms);
}

TEST(Backoff, CapIsNeverExceededEvenAfterManyAttempts) {
  backoff b(7ms, 300ms, 1);
  for (int n = 0; n < 10'000; ++n) EXPECT_LE(b.next(), 300ms);
  backoff huge(std::chrono::milliseconds(1LL << 40), 2s, 1);  // first above cap
  EXPECT_LE(huge.next(), 2s);
  EXPECT_GE(huge.next(), 1s);
}

TEST(Backoff, ResetStartsOver) {
  backoff b(100ms, 5s, 9);
  for (int n = 0; n < 20; ++n) b.next();
  EXPECT_EQ(b.attempts(), 20);
  b.reset();
  EXPECT_EQ(b.attempts(), 0);
  EXPECT_LE(b.next(), 100ms);
}

TEST(Backoff, RestartSoonPutsTwoShortAttemptsBeforeTheUsualSchedule) {
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    backoff b(100ms, 5s, seed);
    for (int n = 0; n < 5; ++n) b.next();
    b.restart_soon();
    EXPECT_EQ(b.attempts(), 0);
    auto d = b.next();
    EXPECT_GE(d, 12ms);
    EXPECT_LE(d, 25ms);
    d = b.next();
    EXPECT_GE(d, 25ms);
    EXPECT_LE(d, 50ms);
    for (int n = 0; n < 6; ++n) {  // then 100 ms doubling, as after reset()
      const auto base = std::min<std::chrono::milliseconds>(5s, 100ms * (1 << n));
      d = b.next();
      EXPECT_GE(d, base / 2) << n;
      EXPECT_LE(d, base) << n;
    }
    b.reset();  // a connection that worked ends the head start
    d = b.next();
    EXPECT_GE(d, 50ms);
    EXPECT_LE(d, 100ms);
  }
  backoff tiny(1ms, 5s, 3);  // halving a tiny first delay reaches 0: dial again at once
  tiny.restart_soon();
  EXPECT_EQ(tiny.next(), 0ms);
}

TEST(Backoff, DifferentSeedsGiveDifferentSequences) {
  backoff a(100ms, 5s, 1), b(100ms, 5s, 2), c(100ms, 5s, 1);
  std::vector<std::chrono::milliseconds> sa, sb, sc;
  for (int n = 0; n < 20; ++n) {
    sa.push_back(a.next());
    sb.push_back(b.next());
    sc.push_back(c.next());
  }
  EXPECT_NE(sa, sb);
  EXPECT_EQ(sa, sc);
}

TEST(Backoff, ZeroFirstGivesZeroDelays) {
  backoff b(0ms, 5s, 3);
  for (int n = 0; n < 100; ++n) EXPECT_EQ(b.next(), 0ms);
}

}  // namespace
}  // namespace burrow
