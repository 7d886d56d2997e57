// The relay's bridge between two streams of two real links (TLS on 127.0.0.1), joined on one
// thread, as on a one-CPU relay, and across two, as on a relay with two workers: bytes handed
// on while the far stream has credit, queued and carried when it has none, in order both ways,
// with half-closes after the bytes.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/run_on.hpp"
#include "e2ee/link_pair.hpp"
#include "harness/net.hpp"
#include "link/rate_limit.hpp"
#include "link/stream.hpp"

namespace burrow::link {
namespace stream_join_test {  // named: the unity build puts test files side by side

namespace asio = boost::asio;
using boost::system::error_code;

// Small credit and frames, so that a transfer keeps running out of credit and switching between
// handing bytes on and queueing them.
link_limits small_window() {
  link_limits l;
  l.initial_window = 16 * 1024;
  l.max_frame = 4 * 1024;
  return l;
}

// Where the two link pairs run: both on one io_context, or the agent's pair (`b`) on a second one
// with a thread of its own, as the relay's worker threads hold a visitor's link and an agent's.
class sides {
 public:
  explicit sides(bool two_threads) {
    if (!two_threads) return;
    b_.emplace();
    keep_.emplace(b_->get_executor());
    std::promise<void> ran;
    ran_ = ran.get_future();
    thread_ = std::thread([this, ran = std::move(ran)]() mutable {
      b_->run();
      ran.set_value();
    });
  }
  ~sides() { stop(); }
  sides(const sides&) = delete;
  sides& operator=(const sides&) = delete;
  asio::io_context& a() { return a_; }
  asio::io_context& b() { return b_ ? *b_ : a_; }
  // Ends the second thread, before the link pairs go, which it would otherwise still touch: once
  // it has nothing left to do (the links it ran have wound down), or after 5 s.
  void stop() {
    if (!b_ || !thread_.joinable()) return;
    keep_.reset();
    if (ran_.wait_for(std::chrono::seconds(5)) != std::future_status::ready) b_->stop();
    thread_.join();
  }

 private:
  asio::io_context a_;
  std::optional<asio::io_context> b_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> keep_;
  std::future<void> ran_;
  std::thread thread_;
};

template <class F>
asio::awaitable<std::invoke_result_t<F>> call(F f) {
  co_return f();
}

// `f()` on the thread of `pair`'s links, the caller resumed on its own.
template <class F>
asio::awaitable<std::invoke_result_t<F>> on(test::link_pair* pair, F f) {
  auto hop = run_on(pair->executor(), call(std::move(f)));
  co_return co_await std::move(hop);
}

// Two link pairs, as a visitor's link and an agent's link meet at the relay: `visitor` is the
// visitor's end, `from` and `to` the relay's two streams, `agent` the agent's end.
struct bridged {
  std::shared_ptr<stream> visitor, from, to, agent;
};

// `cap`: bytes per second on the agent's link at the relay, as a token's bandwidth cap; 0: none.
asio::awaitable<bridged> open_both(test::link_pair* a, test::link_pair* b, std::uint64_t cap = 0) {
  auto connect_a = a->connect();
  co_await std::move(connect_a);
  auto b_ex = b->executor();
  auto connect_b = run_on(b_ex, b->connect());
  co_await std::move(connect_b);
  if (cap) {
    auto capping =
        on(b, [b, cap] { b->near().set_rate_limiter(std::make_shared<rate_limiter>(cap)); });
    co_await std::move(capping);
  }
  auto open_a = a->open();
  auto ends_a = co_await std::move(open_a);
  auto open_b = run_on(b_ex, b->open());
  auto ends_b = co_await std::move(open_b);
  co_return bridged{ends_a.near, ends_a.far, ends_b.near, ends_b.far};
}

asio::awaitable<error_code> send_all(std::shared_ptr<stream> s, const std::string* bytes) {
  // Uneven writes, so frames do not line up with the credit.
  error_code ec;
  std::size_t at = 0, step = 1;
  while (at < bytes->size() && !ec) {
    std::size_t n = std::min(bytes->size() - at, 700 + (step++ * 977) % 5000);
    auto write = s->write_all({reinterpret_cast<const std::uint8_t*>(bytes->data() + at), n}, ec);
    co_await std::move(write);
    at += n;
  }
  if (!ec) s->shutdown_send();
  co_return ec;
}

asio::awaitable<std::string> receive_all(std::shared_ptr<stream> s, error_code* ec) {
  std::string out;
  std::vector<char> buf(3000);  // smaller than a frame: credit returns in small steps
  for (;;) {
    auto read = s->read_some(asio::buffer(buf), *ec);
    std::size_t n = co_await std::move(read);
    out.append(buf.data(), n);
    if (*ec) co_return out;
  }
}

// stream::join, waited for: returns once `done` ran (on either stream's thread).
asio::awaitable<void> join_and_wait(std::shared_ptr<stream> a, std::shared_ptr<stream> b) {
  auto ex = co_await asio::this_coro::executor;
  auto done = std::make_shared<std::atomic<int>>(0);
  stream::join(a, b, [done] { ++*done; });
  asio::steady_timer tick(ex);
  while (*done == 0) {
    tick.expires_after(std::chrono::milliseconds(5));
    co_await tick.async_wait(asio::use_awaitable);
  }
  EXPECT_EQ(*done, 1);
}

struct both_ways {
  std::string at_agent, at_visitor;
  error_code agent_ec, visitor_ec, send_up_ec, send_down_ec;
  bool from_reset = true, to_reset = true;
  std::size_t streams_left = 1;    // on the relay's ends of the two links, once bridged
  std::uint64_t write_blocks = 0;  // times the agent's link at the relay filled its buffer
  bool two_threads = false;        // the relay's two streams ran on two executors
  std::chrono::steady_clock::duration took{};
};

asio::awaitable<both_ways> carry_both_ways(test::link_pair* a, test::link_pair* b,
                                           const std::string* up, const std::string* down,
                                           std::uint64_t cap = 0) {
  using namespace asio::experimental::awaitable_operators;
  auto opening = open_both(a, b, cap);
  auto s = co_await std::move(opening);
  both_ways r;
  r.two_threads = s.from->executor() != s.to->executor();
  const auto start = std::chrono::steady_clock::now();
  auto bridge = join_and_wait(s.from, s.to);
  auto send_up = send_all(s.visitor, up);
  auto send_down = run_on(b->executor(), send_all(s.agent, down));
  auto at_agent = run_on(b->executor(), receive_all(s.agent, &r.agent_ec));
  auto at_visitor = receive_all(s.visitor, &r.visitor_ec);
  auto [up_ec, down_ec, agent_got, visitor_got] =
      co_await (std::move(bridge) && std::move(send_up) && std::move(send_down) &&
                std::move(at_agent) && std::move(at_visitor));
  r.took = std::chrono::steady_clock::now() - start;
  r.send_up_ec = up_ec;
  r.send_down_ec = down_ec;
  r.at_agent = std::move(agent_got);
  r.at_visitor = std::move(visitor_got);
  r.from_reset = s.from->is_reset();
  auto at_b = on(b, [b, to = s.to, &r] {
    r.to_reset = to->is_reset();
    r.write_blocks = b->near().counters().write_blocks;
    return b->near().stream_count();
  });
  r.streams_left = a->far().stream_count() + co_await std::move(at_b);
  a->close();
  auto closing = on(b, [b] { b->close(); });
  co_await std::move(closing);
  co_return r;
}

// Runs `body` on the first thread for at most `limit`, then ends the second.
template <class T>
std::optional<T> run_for(sides& where, asio::awaitable<T> body, std::chrono::seconds limit) {
  auto result = asio::co_spawn(where.a(), std::move(body), asio::use_future);
  where.a().run_for(limit);
  where.stop();
  if (result.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return std::nullopt;
  return result.get();
}

// Each test runs with the relay's two streams on one thread and on two.
class StreamBridgeWay : public testing::TestWithParam<bool> {
 protected:
  bool two_threads() const { return GetParam(); }
  sides where{two_threads()};
};

INSTANTIATE_TEST_SUITE_P(Bridges, StreamBridgeWay, testing::Values(false, true),
                         [](const auto& info) {
                           return info.param ? "two_threads" : "one_thread";
                         });

TEST_P(StreamBridgeWay, CarriesBothWaysInOrderThroughShortCredit) {
  test::link_pair a(where.a(), small_window()), b(where.b(), small_window());
  const std::string up = test::deterministic_bytes(3u << 20, 7);
  const std::string down = test::deterministic_bytes(2u << 20, 8);
  auto r = run_for(where, carry_both_ways(&a, &b, &up, &down), std::chrono::seconds(60));
  ASSERT_TRUE(r) << "the transfer did not finish within 60 s";
  EXPECT_EQ(r->two_threads, two_threads());
  EXPECT_FALSE(r->send_up_ec) << r->send_up_ec.message();
  EXPECT_FALSE(r->send_down_ec) << r->send_down_ec.message();
  EXPECT_EQ(r->agent_ec, asio::error::eof) << r->agent_ec.message();
  EXPECT_EQ(r->visitor_ec, asio::error::eof) << r->visitor_ec.message();
  ASSERT_EQ(r->at_agent.size(), up.size());
  ASSERT_EQ(r->at_visitor.size(), down.size());
  EXPECT_EQ(test::sha256_hex(r->at_agent), test::sha256_hex(up));
  EXPECT_EQ(test::sha256_hex(r->at_visitor), test::sha256_hex(down));
  EXPECT_FALSE(r->from_reset);
  EXPECT_FALSE(r->to_reset);
  EXPECT_EQ(r->streams_left, 0u);
}

// Frames that come faster than the agent's link writes them (small socket buffers) fill its
// buffer past the high water: the visitor's stream waits for room there, and goes on when the
// writer has drained it.
TEST_P(StreamBridgeWay, WaitsForRoomOnAFullLinkAndGoesOn) {
  link_limits limits;
  limits.initial_window = 1024 * 1024;
  limits.max_frame = 4 * 1024;
  limits.write_high_water = 16 * 1024;
  limits.write_low_water = 4 * 1024;
  test::link_pair a(where.a(), limits), b(where.b(), limits);
  b.use_small_socket_buffers(8 * 1024);  // the agent's link at the relay writes slowly
  const std::string up = test::deterministic_bytes(4u << 20, 11);
  const std::string down = test::deterministic_bytes(1u << 20, 12);
  auto r = run_for(where, carry_both_ways(&a, &b, &up, &down), std::chrono::seconds(60));
  ASSERT_TRUE(r) << "the transfer did not finish within 60 s";
  EXPECT_GT(r->write_blocks, 0u) << "the agent's link never filled: the test tests nothing";
  EXPECT_FALSE(r->send_up_ec) << r->send_up_ec.message();
  EXPECT_FALSE(r->send_down_ec) << r->send_down_ec.message();
  EXPECT_EQ(test::sha256_hex(r->at_agent), test::sha256_hex(up));
  EXPECT_EQ(test::sha256_hex(r->at_visitor), test::sha256_hex(down));
  EXPECT_EQ(r->streams_left, 0u);
}

// A bandwidth cap on the agent's link holds bridged bytes to its rate, both ways.
TEST_P(StreamBridgeWay, ACapHoldsTheBytesToItsRate) {
  test::link_pair a(where.a(), small_window()), b(where.b(), small_window());
  const std::string up = test::deterministic_bytes(320 * 1024, 14);
  const std::string down = test::deterministic_bytes(64 * 1024, 15);
  // 256 KiB/s, a bucket of 32 KiB: at least (320 + 64 - 32) / 256 s, about 1.4 s.
  auto r =
      run_for(where, carry_both_ways(&a, &b, &up, &down, 256 * 1024), std::chrono::seconds(30));
  ASSERT_TRUE(r) << "the transfer did not finish within 30 s";
  EXPECT_GE(r->took, std::chrono::milliseconds(1200)) << "the cap was not applied";
  EXPECT_EQ(test::sha256_hex(r->at_agent), test::sha256_hex(up));
  EXPECT_EQ(test::sha256_hex(r->at_visitor), test::sha256_hex(down));
  EXPECT_EQ(r->streams_left, 0u);
}

asio::awaitable<std::string> read_exactly(std::shared_ptr<stream> s, std::size_t n) {
  std::string out;
  std::vector<char> buf(n);
  error_code ec;
  while (out.size() < n && !ec) {
    auto read = s->read_some(asio::buffer(buf.data(), n - out.size()), ec);
    std::size_t got = co_await std::move(read);
    out.append(buf.data(), got);
  }
  co_return out;
}

// Waits, 5 s at most, until `s` has had `n` bytes from its peer.
asio::awaitable<void> wait_bytes_in(std::shared_ptr<stream> s, std::uint64_t n) {
  asio::steady_timer settle(co_await asio::this_coro::executor);
  for (int i = 0; i < 500 && s->bytes_in() < n; ++i) {
    settle.expires_after(std::chrono::milliseconds(10));
    co_await settle.async_wait(asio::use_awaitable);
  }
}

struct held_for_credit {
  std::size_t queued_within = 1;  // at the relay, once the agent's whole credit had come
  std::size_t queued_past = 0;    // once more had come than the agent's stream had credit for
  std::string at_agent;
  std::size_t queued_after = 1;  // once the agent had read it all
  bool bridge_ended = false;     // after both half-closes
};

asio::awaitable<held_for_credit> join_past_credit(test::link_pair* a, test::link_pair* b,
                                                  const std::string* bytes) {
  auto opening = open_both(a, b);
  auto s = co_await std::move(opening);
  held_for_credit r;
  auto done = std::make_shared<int>(0);
  stream::join(s.from, s.to, [done] { ++*done; });
  // Exactly the agent stream's credit: all of it is handed on from the link's reader.
  const std::size_t credit = small_window().initial_window;
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes->data());
  error_code ec;
  auto first = s.visitor->write_all({data, credit}, ec);
  co_await std::move(first);
  auto arriving = wait_bytes_in(s.from, credit);
  co_await std::move(arriving);
  r.queued_within = s.from->queued();
  // The agent does not read yet, so its stream returns no credit: the rest waits at the relay.
  auto rest = s.visitor->write_all({data + credit, bytes->size() - credit}, ec);
  co_await std::move(rest);
  auto arriving_more = wait_bytes_in(s.from, bytes->size());
  co_await std::move(arriving_more);
  r.queued_past = s.from->queued();
  // Reading gives credit back: the window frame sends the rest on.
  auto reading = read_exactly(s.agent, bytes->size());
  r.at_agent = co_await std::move(reading);
  r.queued_after = s.from->queued();
  s.visitor->shutdown_send();
  s.agent->shutdown_send();
  asio::steady_timer settle(co_await asio::this_coro::executor);
  for (int i = 0; i < 500 && *done == 0; ++i) {
    settle.expires_after(std::chrono::milliseconds(10));
    co_await settle.async_wait(asio::use_awaitable);
  }
  r.bridge_ended = *done == 1;
  a->close();
  b->close();
  co_return r;
}

TEST(StreamBridge, JoinedPassesBytesWithinCreditAndHoldsTheRestForTheWindow) {
  sides where(false);
  test::link_pair a(where.a(), small_window()), b(where.b(), small_window());
  const std::string bytes = test::deterministic_bytes(16 * 1024 + 1000, 9);
  auto r = run_for(where, join_past_credit(&a, &b, &bytes), std::chrono::seconds(20));
  ASSERT_TRUE(r) << "did not finish within 20 s";
  EXPECT_EQ(r->queued_within, 0u) << "bytes within credit should pass on at once";
  EXPECT_EQ(r->queued_past, 1000u) << "bytes past the agent's credit should wait at the relay";
  EXPECT_EQ(r->at_agent, bytes);
  EXPECT_EQ(r->queued_after, 0u);
  EXPECT_TRUE(r->bridge_ended);
}

struct first_flight {
  std::size_t queued = 0;       // bytes the relay's stream held before the bridge began
  std::size_t held_queued = 0;  // the memory its queue held for them
  std::size_t held_after = 1;   // and once the bridge had passed them on
  std::size_t held_quiet = 1;   // and once the stream had been quiet for a while
  std::string at_agent;
  bool bridge_ended = false;  // after both half-closes
};

asio::awaitable<void> bridge_then_flag(std::shared_ptr<stream> a, std::shared_ptr<stream> b,
                                       bool* done) {
  auto bridge = join_and_wait(std::move(a), std::move(b));
  co_await std::move(bridge);
  *done = true;
}

asio::awaitable<first_flight> queue_a_first_flight(test::link_pair* a, test::link_pair* b,
                                                   const std::string* bytes) {
  auto opening = open_both(a, b);
  auto s = co_await std::move(opening);
  first_flight r;
  auto ex = co_await asio::this_coro::executor;
  // The visitor speaks first, as burrow connect's TLS client does, before the relay has its
  // agent stream: the bytes wait in the relay's stream.
  error_code ec;
  auto write = s.visitor->write_all(
      {reinterpret_cast<const std::uint8_t*>(bytes->data()), bytes->size()}, ec);
  co_await std::move(write);
  asio::steady_timer settle(ex);
  for (int i = 0; i < 500 && s.from->queued() < bytes->size(); ++i) {
    settle.expires_after(std::chrono::milliseconds(10));
    co_await settle.async_wait(asio::use_awaitable);
  }
  r.queued = s.from->queued();
  r.held_queued = s.from->queue_capacity();
  bool bridged_done = false;
  asio::co_spawn(ex, bridge_then_flag(s.from, s.to, &bridged_done), asio::detached);
  auto reading = run_on(b->executor(), read_exactly(s.agent, bytes->size()));
  r.at_agent = co_await std::move(reading);
  r.held_after = s.from->queue_capacity();
  // The link's keeper looks each second; a stream quiet for a second gives its queue back.
  for (int i = 0; i < 40 && s.from->queue_capacity() > 0; ++i) {
    settle.expires_after(std::chrono::milliseconds(100));
    co_await settle.async_wait(asio::use_awaitable);
  }
  r.held_quiet = s.from->queue_capacity();
  s.visitor->shutdown_send();
  auto closing_agent = on(b, [agent = s.agent] { agent->shutdown_send(); });
  co_await std::move(closing_agent);
  for (int i = 0; i < 500 && !bridged_done; ++i) {
    settle.expires_after(std::chrono::milliseconds(10));
    co_await settle.async_wait(asio::use_awaitable);
  }
  r.bridge_ended = bridged_done;
  a->close();
  auto closing = on(b, [b] { b->close(); });
  co_await std::move(closing);
  co_return r;
}

// At 1,000 visitors every first flight waits at the relay at once while the agent answers the
// opens: each queue holds what it was sent (not a 4 KiB buffer), and none keeps memory after.
TEST_P(StreamBridgeWay, AFirstFlightWaitsInABufferOfItsSizeThatIsGivenBackOncePassedOn) {
  test::link_pair a(where.a(), small_window()), b(where.b(), small_window());
  const std::string bytes = test::deterministic_bytes(700, 10);
  auto r = run_for(where, queue_a_first_flight(&a, &b, &bytes), std::chrono::seconds(20));
  ASSERT_TRUE(r) << "did not finish within 20 s";
  EXPECT_EQ(r->queued, bytes.size());
  EXPECT_EQ(r->held_queued, bytes.size());
  EXPECT_EQ(r->at_agent, bytes);
  EXPECT_EQ(r->held_after, 0u);
  EXPECT_TRUE(r->bridge_ended);
}

// A queue that grew past a few KiB (a burst, bulk) is kept while the stream is busy, where it
// would be made again at once, and given back once the stream goes quiet.
TEST_P(StreamBridgeWay, ALargerQueueStaysWhileBusyAndIsGivenBackWhenQuiet) {
  test::link_pair a(where.a(), small_window()), b(where.b(), small_window());
  const std::string bytes = test::deterministic_bytes(12 * 1024, 13);  // within the credit
  auto r = run_for(where, queue_a_first_flight(&a, &b, &bytes), std::chrono::seconds(20));
  ASSERT_TRUE(r) << "did not finish within 20 s";
  EXPECT_EQ(r->queued, bytes.size());
  EXPECT_GT(r->held_queued, stream::small_queue);
  EXPECT_EQ(r->at_agent, bytes);
  EXPECT_EQ(r->held_after, r->held_queued);
  EXPECT_EQ(r->held_quiet, 0u);
  EXPECT_TRUE(r->bridge_ended);
}

struct after_reset {
  std::string at_agent;
  error_code agent_ec;  // the agent's next read, after the visitor's reset
  bool bridge_ended = false;
  std::size_t streams_left = 1;
};

asio::awaitable<after_reset> reset_midway(test::link_pair* a, test::link_pair* b) {
  auto opening = open_both(a, b);
  auto s = co_await std::move(opening);
  after_reset r;
  auto ex = co_await asio::this_coro::executor;
  bool bridged_done = false;
  asio::co_spawn(ex, bridge_then_flag(s.from, s.to, &bridged_done), asio::detached);
  const std::string hello = "hello through the relay";
  error_code ec;
  auto write =
      s.visitor->write_all({reinterpret_cast<const std::uint8_t*>(hello.data()), hello.size()}, ec);
  co_await std::move(write);
  auto reading = run_on(b->executor(), read_exactly(s.agent, hello.size()));
  r.at_agent = co_await std::move(reading);
  s.visitor->reset(proto::stream_status::cancelled);
  std::vector<char> buf(64);
  auto next = run_on(b->executor(), s.agent->read_some(asio::buffer(buf), r.agent_ec));
  co_await std::move(next);
  asio::steady_timer settle(ex);
  for (int i = 0; i < 500 && !bridged_done; ++i) {
    settle.expires_after(std::chrono::milliseconds(10));
    co_await settle.async_wait(asio::use_awaitable);
  }
  r.bridge_ended = bridged_done;
  auto counting = on(b, [b] { return b->near().stream_count(); });
  r.streams_left = a->far().stream_count() + co_await std::move(counting);
  a->close();
  auto closing = on(b, [b] { b->close(); });
  co_await std::move(closing);
  co_return r;
}

// A visitor who resets its stream resets the agent's too, and the relay forgets both.
TEST_P(StreamBridgeWay, AResetCrossesAndEndsTheBridge) {
  test::link_pair a(where.a()), b(where.b());
  auto r = run_for(where, reset_midway(&a, &b), std::chrono::seconds(20));
  ASSERT_TRUE(r) << "did not finish within 20 s";
  EXPECT_EQ(r->at_agent, "hello through the relay");
  EXPECT_EQ(r->agent_ec, asio::error::connection_reset) << r->agent_ec.message();
  EXPECT_TRUE(r->bridge_ended);
  EXPECT_EQ(r->streams_left, 0u);
}

}  // namespace stream_join_test
}  // namespace burrow::link
