// Flow-control accounting: credit is spent, granted back in batches, and overruns are caught.
#include "link/flow_window.hpp"

#include <gtest/gtest.h>

namespace burrow::link {
namespace {

TEST(FlowWindow, SendWindowSpendsAndGrants) {
  send_window w(1000);
  w.consume(600);
  EXPECT_EQ(w.available(), 400u);
  EXPECT_TRUE(w.grant(600));
  EXPECT_EQ(w.available(), 1000u);
}

TEST(FlowWindow, SendWindowRejectsOverflowAndZeroGrant) {
  send_window w(max_window - 10);
  EXPECT_FALSE(w.grant(11));
  EXPECT_FALSE(w.grant(0));
  EXPECT_TRUE(w.grant(10));
  EXPECT_EQ(w.available(), max_window);
}

TEST(FlowWindow, ReceiverCatchesOverrun) {
  receive_window r(100);
  EXPECT_TRUE(r.on_data(60));
  EXPECT_TRUE(r.on_data(40));
  EXPECT_FALSE(r.on_data(1));
}

TEST(FlowWindow, ReceiverBatchesGrantsByAQuarter) {
  receive_window r(1000);
  ASSERT_TRUE(r.on_data(1000));
  EXPECT_EQ(r.on_consumed(100), 0u);
  EXPECT_EQ(r.on_consumed(100), 0u);
  EXPECT_EQ(r.on_consumed(50), 250u);
  EXPECT_EQ(r.outstanding(), 250u);
  EXPECT_TRUE(r.on_data(250));
  EXPECT_FALSE(r.on_data(1));
}

TEST(FlowWindow, CreditNeverExceedsTheWindow) {
  receive_window r(64);
  send_window s(64);
  for (int round = 0; round < 100; ++round) {
    std::uint32_t n = s.available() < 7 ? s.available() : 7;
    if (n == 0) break;
    s.consume(n);
    ASSERT_TRUE(r.on_data(n));
    if (auto g = r.on_consumed(n)) {
      ASSERT_TRUE(s.grant(g));
    }
    ASSERT_LE(s.available(), 64u);
    ASSERT_EQ(s.available(), r.outstanding());
  }
}

}  // namespace
}  // namespace burrow::link
