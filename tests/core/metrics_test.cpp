// The Prometheus rendering and the log limiter.
#include "core/metrics.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "core/log_limiter.hpp"

namespace burrow {
namespace {

TEST(metrics, RendersFamiliesWithHelpTypeAndLabels) {
  metrics m;
  m.describe("burrow_things_total", "Things seen.");
  m.get("burrow_things_total", "kind=\"a\"") += 3;
  m.get("burrow_things_total", "kind=\"b\"") += 1;
  m.get("burrow_things_total", "kind=\"a\"") += 1;  // the same counter
  m.gauge("burrow_open", "", [] { return 7.0; });
  auto text = m.render();
  EXPECT_NE(text.find("# HELP burrow_things_total Things seen.\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE burrow_things_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("burrow_things_total{kind=\"a\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("burrow_things_total{kind=\"b\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE burrow_open gauge\nburrow_open 7\n"), std::string::npos);
}

TEST(shared_log_limiter, LetsOneLineThroughPerIntervalAndCountsTheRest) {
  shared_log_limiter limiter(std::chrono::milliseconds(200));
  std::uint64_t held = 99;
  EXPECT_TRUE(limiter.allow(held));
  EXPECT_EQ(held, 0u);
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(limiter.allow(held));
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_TRUE(limiter.allow(held));
  EXPECT_EQ(held, 1000u);
}

}  // namespace
}  // namespace burrow
