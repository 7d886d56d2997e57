// A link's read buffers grow for bulk and are given back after it: once the link has been quiet
// for a second (at the next frame, or by the keeper without one), not only after 16 small reads;
// also when what made them grow was a large control message on a link without streams.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdint>
#include <vector>

#include "e2ee/link_pair.hpp"
#include "link/stream.hpp"
#include "proto/control.hpp"

namespace burrow::link {
namespace read_buffers_test {  // named: the unity build puts test files side by side
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace std::chrono_literals;

struct result {
  std::size_t received = 0;
  std::size_t peak = 0;   // the far link's read buffers during the transfer
  std::size_t after = 0;  // and when the wait below ended
  std::chrono::milliseconds waited{};
};

constexpr std::size_t bulk = 8u << 20;
constexpr std::size_t idle_keep = 32 * 1024;

// Polls `done` every 20 ms until it holds or `limit` has passed; whether it holds.
template <class Done>
asio::awaitable<bool> wait_until(Done done, std::chrono::milliseconds limit) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < until) {
    timer.expires_after(20ms);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  co_return done();
}

// Waits up to 6 s for the far link to give its read buffers back: how long, and what is left.
asio::awaitable<void> wait_for_give_back(test::link_pair* pair, result& r) {
  const auto start = std::chrono::steady_clock::now();
  co_await wait_until([pair] { return pair->far().read_buffer_capacity() <= idle_keep; }, 6s);
  r.waited = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  r.after = pair->far().read_buffer_capacity();
}

asio::awaitable<result> bulk_then_quiet(test::link_pair* pair) {
  auto ends = co_await pair->open();
  result r;
  auto send = [](std::shared_ptr<stream> s) -> asio::awaitable<void> {
    std::vector<std::uint8_t> data(bulk, 0x42);
    error_code ec;
    co_await s->write_all(data, ec);
    s->shutdown_send();
  };
  asio::co_spawn(pair->executor(), send(ends.near), asio::detached);
  std::vector<char> buf(64 * 1024);
  for (;;) {
    error_code ec;
    const std::size_t n = co_await ends.far->read_some(asio::buffer(buf), ec);
    r.peak = std::max(r.peak, pair->far().read_buffer_capacity());
    if (ec) break;
    r.received += n;
  }
  // Now only the links' pings and pongs (every 1.5 s each way) reach the far link.
  co_await wait_for_give_back(pair, r);
  co_return r;
}

TEST(LinkReadBuffers, GoBackAfterAQuietSecond) {
  asio::io_context ioc;
  link_limits limits;
  limits.ping_interval = 1500ms;
  test::link_pair pair(ioc, limits);
  auto r = test::run_with_links(ioc, pair, bulk_then_quiet(&pair), 20s);
  ASSERT_TRUE(r.has_value()) << "timed out";
  EXPECT_EQ(r->received, bulk);
  EXPECT_GT(r->peak, 4 * idle_keep) << "bulk never made the reads large";
  // Sixteen small reads would take the pings of about 12 s; the quiet second takes one.
  EXPECT_LE(r->after, idle_keep) << "still " << r->after << " bytes after " << r->waited.count()
                                 << " ms";
}

TEST(LinkReadBuffers, GoBackAfterAQuietSecondWithoutAFrame) {
  asio::io_context ioc;
  link_limits limits;
  limits.ping_interval = 5s;  // no ping within the wait: the keeper must see the quiet second
  test::link_pair pair(ioc, limits);
  auto r = test::run_with_links(ioc, pair, bulk_then_quiet(&pair), 20s);
  ASSERT_TRUE(r.has_value()) << "timed out";
  EXPECT_EQ(r->received, bulk);
  EXPECT_GT(r->peak, 4 * idle_keep) << "bulk never made the reads large";
  EXPECT_LE(r->after, idle_keep) << "still " << r->after << " bytes";
  // A quiet second and a tick of the keeper; the next frame (a ping) would be 5 s away.
  EXPECT_LT(r->waited, 3000ms);
}

// An agent registering many services gets a large answer on a link with no stream yet, whose
// keeper is resting until the next ping: the buffers that answer grew must not wait for it.
asio::awaitable<result> control_then_quiet(test::link_pair* pair) {
  proto::register_services many;
  for (int i = 0; i < 400; ++i)
    many.services.push_back({.name = "service-" + std::to_string(1000 + i), .remote_port = 0});
  result r;
  // Let both keepers come to rest on an idle link first.
  asio::steady_timer timer(pair->executor(), 300ms);
  co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  pair->near().send_control(many);
  co_await wait_until([pair] { return pair->far().read_buffer_capacity() > 4 * idle_keep; }, 5s);
  r.peak = pair->far().read_buffer_capacity();
  co_await wait_for_give_back(pair, r);
  co_return r;
}

TEST(LinkReadBuffers, GoBackAfterAQuietSecondWhenOnlyControlMessagesCame) {
  asio::io_context ioc;
  link_limits limits;
  limits.ping_interval = 5s;  // the resting keepers' next wake-up, without the fix
  test::link_pair pair(ioc, limits);
  auto r = test::run_with_links(ioc, pair, control_then_quiet(&pair), 20s);
  ASSERT_TRUE(r.has_value()) << "timed out";
  EXPECT_GT(r->peak, 4 * idle_keep) << "the control message never made the reads large";
  EXPECT_LE(r->after, idle_keep) << "still " << r->after << " bytes";
  EXPECT_LT(r->waited, 3000ms);
}

}  // namespace
}  // namespace read_buffers_test
}  // namespace burrow::link
