// The link's keeper: an idle link pings once an interval between both ends (not once each), and a
// keeper that rests until its next ping wakes for a new stream's deadlines.
#include <gtest/gtest.h>

#include <cstdint>

#include "e2ee/link_pair.hpp"
#include "link/stream.hpp"

namespace burrow::link {
namespace keeper_test {  // named: the unity build puts test files side by side
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

std::uint64_t frames_sent(test::link_pair* pair) {
  return pair->near().counters().frames_out + pair->far().counters().frames_out;
}

struct idle_result {
  std::uint64_t frames = 0;  // by both links over the spell
  std::string far_ended;     // empty: the links stayed up
};

asio::awaitable<idle_result> idle_spell(test::link_pair* pair, std::chrono::milliseconds spell) {
  co_await test::pause(300ms);  // past the opening exchange
  const auto before = frames_sent(pair);
  co_await test::pause(spell);
  co_return idle_result{frames_sent(pair) - before, pair->far_ended()};
}

TEST(LinkKeeper, AnIdleLinkPingsOnceAnIntervalBetweenBothEnds) {
  asio::io_context ioc;
  link_limits limits;
  limits.ping_interval = 100ms;
  limits.ping_timeout = 400ms;
  test::link_pair pair(ioc, limits);
  auto r = test::run_with_links(ioc, pair, idle_spell(&pair, 2000ms), 10s);
  ASSERT_TRUE(r.has_value()) << "timed out";
  EXPECT_EQ(r->far_ended, "") << "an idle link ended";
  // 20 intervals: a ping and its pong each, 40 frames. Both ends pinging on their own sent 80.
  EXPECT_GE(r->frames, 10u) << "the links stopped pinging";
  EXPECT_LE(r->frames, 50u);
}

struct open_result {
  bool reset = false;
  proto::stream_status status{};
  std::chrono::milliseconds after{};
};

// The keeper rested for a second (its next ping 5 s away), then a stream opened and went quiet.
asio::awaitable<open_result> quiet_stream_after_rest(test::link_pair* pair) {
  co_await test::pause(1000ms);
  auto ends = co_await pair->open();
  const auto opened = std::chrono::steady_clock::now();
  while (!ends.near->is_reset() && std::chrono::steady_clock::now() - opened < 6s)
    co_await test::pause(20ms);
  co_return open_result{ends.near->is_reset(), ends.near->reset_status(),
                        std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - opened)};
}

TEST(LinkKeeper, ANewStreamWakesTheRestingKeeper) {
  asio::io_context ioc;
  link_limits limits;
  limits.ping_interval = 5s;
  limits.stream_idle_timeout = 300ms;
  test::link_pair pair(ioc, limits);
  auto r = test::run_with_links(ioc, pair, quiet_stream_after_rest(&pair), 20s);
  ASSERT_TRUE(r.has_value()) << "timed out";
  ASSERT_TRUE(r->reset) << "the idle stream was never reset";
  EXPECT_EQ(r->status, proto::stream_status::idle_timeout);
  // The idle timeout plus one tick of the keeper (1 s); a keeper still resting until its ping
  // would take until about 5 s after the link came up.
  EXPECT_LT(r->after, 2500ms);
}

}  // namespace
}  // namespace keeper_test
}  // namespace burrow::link
