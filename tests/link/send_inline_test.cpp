// A link carrying one stream sends what that stream reads from its socket at once, from the
// stream's own read, without waking the link's writer (link::send_inline). When the link's
// socket takes only part of such a write, the writer finishes it: every byte arrives once and in
// order, inside the link's TLS and as sealed frames. (test::link_pair runs TLS links only; the
// unencrypted link's writes take the same path, and the end-to-end tests cover it.)
#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "e2ee/link_pair.hpp"
#include "link/stream.hpp"

namespace burrow::link {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  std::uint32_t x = 12345;
  for (auto& c : s) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

// Reads the stream to its end, pausing now and then so the near link's writes back up.
asio::awaitable<std::string> receive_slowly(std::shared_ptr<stream> s) {
  std::string out;
  std::vector<char> buf(16 * 1024);
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (int reads = 0;; ++reads) {
    error_code ec;
    auto read = s->read_some(asio::buffer(buf), ec);
    std::size_t n = co_await std::move(read);
    if (ec) break;
    out.append(buf.data(), n);
    if (reads % 16 == 0) {
      timer.expires_after(2ms);
      co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
  }
  co_return out;
}

asio::awaitable<void> write_and_close(tcp::socket* socket, const std::string* data) {
  auto [ec, n] =
      co_await asio::async_write(*socket, asio::buffer(*data), asio::as_tuple(asio::use_awaitable));
  std::ignore = n;
  if (!ec) socket->shutdown(tcp::socket::shutdown_send, ec);
}

struct result {
  std::string received;
  std::size_t streams_on_near = 0;
  link_counters near;
};

// The near stream pumps a real socket, into which the test writes `data`; the far stream reads.
asio::awaitable<result> one_stream(test::link_pair* pair, const std::string* data, bool sealed) {
  using namespace asio::experimental::awaitable_operators;
  auto ex = co_await asio::this_coro::executor;
  auto opening = pair->open(sealed);
  auto ends = co_await std::move(opening);
  result r;
  r.streams_on_near = pair->near().stream_count();
  tcp::acceptor acceptor(ex, {asio::ip::make_address("127.0.0.1"), 0});
  tcp::socket client(ex);
  auto connecting = client.async_connect(acceptor.local_endpoint(), asio::use_awaitable);
  co_await std::move(connecting);
  auto accepting = acceptor.async_accept(asio::use_awaitable);
  tcp::socket server = co_await std::move(accepting);
  ends.far->shutdown_send();  // nothing comes back: the pump ends once the near side is done
  auto received = co_await (ends.near->pump(server) && write_and_close(&client, data) &&
                            receive_slowly(ends.far));
  r.received = std::move(received);
  r.near = pair->near().counters();
  co_return r;
}

void check(link_encryption encryption, bool sealed) {
  asio::io_context ioc;
  test::link_pair pair(ioc, {}, encryption);
  pair.use_small_socket_buffers(4096);
  const std::string data = pattern(4 * 1024 * 1024);
  auto r = test::run_with_links(ioc, pair, one_stream(&pair, &data, sealed), 60s);
  ASSERT_TRUE(r) << "the transfer did not finish within 60 s";
  EXPECT_EQ(r->streams_on_near, 1u);  // the link carries that stream alone: inline sends
  ASSERT_EQ(r->received.size(), data.size());
  EXPECT_TRUE(r->received == data) << "bytes arrived changed or out of order";
  EXPECT_GE(r->near.bytes_out, data.size());
  EXPECT_EQ(pair.far_ended(), "test done");  // not a protocol error on the way
}

TEST(SendInline, OneStreamThroughSmallSocketBuffersArrivesWholeUnderTls) {
  check(link_encryption::full, false);
}

TEST(SendInline, OneSealedStreamThroughSmallSocketBuffersArrivesWhole) {
  check(link_encryption::tls, true);
}

}  // namespace
}  // namespace burrow::link
