// write_now: one non-blocking send that never waits, and drop_front for what is left of a gather
// list, on real loopback sockets.
#include "link/write_now.hpp"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace burrow::link {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

struct socket_pair {
  explicit socket_pair(asio::io_context& io) : client(io), server(io) {
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    client.connect(acceptor.local_endpoint());
    acceptor.accept(server);
  }
  tcp::socket client;
  tcp::socket server;
};

std::vector<std::uint8_t> pattern(std::size_t n, std::uint8_t seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(seed + i * 7);
  return v;
}

TEST(WriteNow, DropFrontSkipsWholeBuffersThenPartOfTheNext) {
  std::uint8_t a[3], b[5], c[7];
  std::vector<asio::const_buffer> list{asio::buffer(a), asio::buffer(b), asio::buffer(c)};
  drop_front(list, 0);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(asio::buffer_size(list), 15u);
  drop_front(list, 3);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].data(), b);
  drop_front(list, 4);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].data(), b + 4);
  EXPECT_EQ(list[0].size(), 1u);
  drop_front(list, 8);
  EXPECT_TRUE(list.empty());
}

TEST(WriteNow, ReturnsZeroWithoutErrorWhenTheSocketIsFullAndNeverWaits) {
  asio::io_context io;
  socket_pair p(io);
  p.client.set_option(asio::socket_base::send_buffer_size(4096));
  p.server.set_option(asio::socket_base::receive_buffer_size(4096));
  p.client.non_blocking(true);
  auto chunk = pattern(64 * 1024, 1);
  std::size_t total = 0;
  boost::system::error_code ec;
  std::size_t n = 1;
  // Loopback takes a few MiB at most before it pushes back; a blocking send would hang here.
  for (int i = 0; i < 10'000 && n > 0; ++i) {
    n = write_now(p.client, asio::buffer(chunk), ec);
    ASSERT_FALSE(ec) << ec.message();
    total += n;
  }
  EXPECT_EQ(n, 0u) << "the peer never read, yet the socket took " << total << " bytes";
  EXPECT_GT(total, 0u);

  std::vector<std::uint8_t> sink(total);
  asio::read(p.server, asio::buffer(sink));  // room again
  EXPECT_GT(write_now(p.client, asio::buffer(chunk), ec), 0u);
  EXPECT_FALSE(ec);
}

TEST(WriteNow, ReportsAResetPeer) {
  asio::io_context io;
  socket_pair p(io);
  p.client.non_blocking(true);
  p.server.set_option(asio::socket_base::linger(true, 0));
  p.server.close();  // an RST
  auto chunk = pattern(1024, 2);
  boost::system::error_code ec;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!ec && std::chrono::steady_clock::now() < deadline) {
    write_now(p.client, asio::buffer(chunk), ec);
    if (!ec) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(ec == asio::error::connection_reset || ec == asio::error::broken_pipe)
      << ec.message();
}

// The way the link's writer uses it: what write_now did not take goes through async_write, and
// the peer receives every byte once, in order.
TEST(WriteNow, TheRestOfAGatherListFollowsThroughAsyncWrite) {
  asio::io_context io;
  socket_pair p(io);
  p.client.set_option(asio::socket_base::send_buffer_size(8192));
  p.client.non_blocking(true);
  auto a = pattern(1 << 20, 3), b = pattern(77, 4), c = pattern(3 << 20, 5);
  std::vector<std::uint8_t> expected;
  for (auto* v : {&a, &b, &c}) expected.insert(expected.end(), v->begin(), v->end());
  std::vector<std::uint8_t> received(expected.size());
  std::size_t sent_at_once = 0;
  bool wrote = false, read = false;

  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        std::vector<asio::const_buffer> list{asio::buffer(a), asio::buffer(b), asio::buffer(c)};
        boost::system::error_code ec;
        sent_at_once = write_now(p.client, list, ec);
        EXPECT_FALSE(ec) << ec.message();
        drop_front(list, sent_at_once);
        auto [wec, n] =
            co_await asio::async_write(p.client, list, asio::as_tuple(asio::use_awaitable));
        EXPECT_FALSE(wec) << wec.message();
        EXPECT_EQ(sent_at_once + n, expected.size());
        wrote = true;
      },
      asio::detached);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto [ec, n] = co_await asio::async_read(p.server, asio::buffer(received),
                                                 asio::as_tuple(asio::use_awaitable));
        EXPECT_FALSE(ec) << ec.message();
        read = true;
      },
      asio::detached);
  io.run_for(std::chrono::seconds(20));
  ASSERT_TRUE(wrote && read) << "timed out";
  EXPECT_LT(sent_at_once, expected.size()) << "expected the socket to push back on 4 MiB";
  EXPECT_TRUE(received == expected);
}

}  // namespace
}  // namespace burrow::link
