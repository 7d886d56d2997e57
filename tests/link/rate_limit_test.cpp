// The bandwidth cap's token bucket: unlimited passes, a burst passes, debt becomes a wait that
// holds the average rate, and a new rate takes effect.
#include "link/rate_limit.hpp"

#include <gtest/gtest.h>

namespace burrow::link {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

TEST(rate_limiter, UnlimitedNeverWaits) {
  rate_limiter r;
  EXPECT_FALSE(r.limited());
  EXPECT_EQ(r.charge(1 << 30).count(), 0);
}

TEST(rate_limiter, BurstPassesThenDebtIsWaitedOut) {
  rate_limiter r(1000000);  // 1 MB/s: a bucket of 125000 bytes
  EXPECT_TRUE(r.limited());
  auto t0 = clock::now();
  EXPECT_EQ(r.charge(125000, t0).count(), 0);
  auto wait = r.charge(250000, t0);  // 250 kB of debt at 1 MB/s
  EXPECT_NEAR(std::chrono::duration<double>(wait).count(), 0.25, 0.001);
  // After waiting it out, the next bytes wait only for themselves.
  auto later = r.charge(100000, t0 + wait);
  EXPECT_NEAR(std::chrono::duration<double>(later).count(), 0.1, 0.001);
}

TEST(rate_limiter, AverageHoldsOverManyCharges) {
  rate_limiter r(2000000);
  auto now = clock::now();
  auto start = now;
  std::uint64_t moved = 0;
  for (int i = 0; i < 1000; ++i) {
    now += r.charge(65536, now);
    moved += 65536;
  }
  double seconds = std::chrono::duration<double>(now - start).count();
  double burst = 2000000.0 / 8;
  EXPECT_NEAR(seconds, (static_cast<double>(moved) - burst) / 2000000.0, 0.01);
}

TEST(rate_limiter, NewRateTakesEffect) {
  rate_limiter r(1000);
  auto t0 = clock::now();
  r.charge(16384, t0);
  EXPECT_GT(r.charge(1000, t0).count(), 0);
  r.set_rate(0);
  EXPECT_FALSE(r.limited());
  EXPECT_EQ(r.charge(1 << 20, t0).count(), 0);
}

}  // namespace
}  // namespace burrow::link
