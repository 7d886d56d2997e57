// splice() at both ends, as `burrow connect` and the agent will run it: a visitor's socket, the
// end-to-end session through the links, and a local service.
#include "e2ee/splice.hpp"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "e2ee/session.hpp"
#include "harness/net.hpp"
#include "link/stream.hpp"

namespace burrow::e2ee {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

const tcp::endpoint loopback{asio::ip::make_address("127.0.0.1"), 0};

// The visitor: sends everything, half-closes, and reads until the far side closes.
struct visitor_result {
  std::string received;
  error_code write_ec, read_ec;
};

asio::awaitable<error_code> visitor_send(tcp::socket* socket, const std::string* payload) {
  auto write =
      asio::async_write(*socket, asio::buffer(*payload), asio::as_tuple(asio::use_awaitable));
  auto [ec, n] = co_await std::move(write);
  if (!ec) socket->shutdown(tcp::socket::shutdown_send, ec);
  co_return ec;
}

asio::awaitable<std::string> visitor_receive(tcp::socket* socket, error_code* ec) {
  std::string out;
  std::vector<char> buf(64 * 1024);
  for (;;) {
    auto read = socket->async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
    auto [rec, n] = co_await std::move(read);
    out.append(buf.data(), n);
    if (rec) {
      *ec = rec;
      co_return out;
    }
  }
}

asio::awaitable<tcp::socket> connect_to(tcp::endpoint at, error_code* ec) {
  auto ex = co_await asio::this_coro::executor;
  tcp::socket socket(ex);
  auto connect = socket.async_connect(at, asio::as_tuple(asio::use_awaitable));
  auto [cec] = co_await std::move(connect);
  *ec = cec;
  co_return socket;
}

asio::awaitable<visitor_result> visitor(tcp::endpoint at, const std::string* payload) {
  using namespace asio::experimental::awaitable_operators;
  visitor_result r;
  auto connect = connect_to(at, &r.write_ec);
  tcp::socket socket = co_await std::move(connect);
  if (r.write_ec) co_return r;
  auto send = visitor_send(&socket, payload);
  auto receive = visitor_receive(&socket, &r.read_ec);
  auto [write_ec, received] = co_await (std::move(send) && std::move(receive));
  r.write_ec = write_ec;
  r.received = std::move(received);
  co_return r;
}

// The `connect` side: accepts the visitor and splices it into the client end of the session.
asio::awaitable<void> near_side(tcp::acceptor* acceptor, secure_stream* tls) {
  auto accept = acceptor->async_accept(asio::use_awaitable);
  auto socket = co_await std::move(accept);
  auto spliced = splice(socket, *tls);
  co_await std::move(spliced);
}

// The agent side: connects to the service and splices it into the server end.
asio::awaitable<void> far_side(std::uint16_t service_port, secure_stream* tls) {
  auto ex = co_await asio::this_coro::executor;
  tcp::socket socket(ex);
  auto connect = socket.async_connect({asio::ip::make_address("127.0.0.1"), service_port},
                                      asio::use_awaitable);
  co_await std::move(connect);
  auto spliced = splice(socket, *tls);
  co_await std::move(spliced);
}

struct splice_result {
  error_code handshake_ec;
  visitor_result visitor;
  bool near_reset = true, far_reset = true;
  std::size_t near_streams = 1, far_streams = 1;
};

asio::awaitable<splice_result> through_splices(test::link_pair* pair, test::agent_contexts* ctx,
                                               std::uint16_t service_port,
                                               const std::string* payload) {
  using namespace asio::experimental::awaitable_operators;
  splice_result r;
  auto open =
      test::open_session(pair, ctx->client.native_handle(), ctx->server.native_handle(), {});
  auto s = co_await std::move(open);
  r.handshake_ec = s.client_ec ? s.client_ec : s.server_ec;
  if (r.handshake_ec) co_return r;
  auto ex = co_await asio::this_coro::executor;
  tcp::acceptor acceptor(ex, loopback);
  auto near = near_side(&acceptor, s.client.get());
  auto far = far_side(service_port, s.server.get());
  auto visit = visitor(acceptor.local_endpoint(), payload);
  r.visitor = co_await (std::move(near) && std::move(far) && std::move(visit));
  r.near_reset = s.ends.near->is_reset();
  r.far_reset = s.ends.far->is_reset();
  r.near_streams = pair->near().stream_count();
  r.far_streams = pair->far().stream_count();
  co_return r;
}

TEST(E2eeSplice, EightMebibytesEachWayThenCleanHalfClose) {
  test::tcp_server echo(test::server_mode::echo);
  asio::io_context ioc;
  test::link_pair pair(ioc);
  test::agent_contexts ctx;
  const std::string payload = test::deterministic_bytes(8u << 20, 42);
  auto r = test::run_with_links(ioc, pair, through_splices(&pair, &ctx, echo.port(), &payload),
                                std::chrono::seconds(60));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->handshake_ec) << r->handshake_ec.message();
  EXPECT_FALSE(r->visitor.write_ec) << r->visitor.write_ec.message();
  EXPECT_EQ(r->visitor.read_ec, asio::error::eof) << r->visitor.read_ec.message();
  ASSERT_EQ(r->visitor.received.size(), payload.size());
  EXPECT_EQ(test::sha256_hex(r->visitor.received), test::sha256_hex(payload));
  EXPECT_FALSE(r->near_reset);
  EXPECT_FALSE(r->far_reset);
  EXPECT_EQ(r->near_streams, 0u);  // finish() let both links forget the stream
  EXPECT_EQ(r->far_streams, 0u);
}

// A service that takes the first bytes and then closes with an RST.
asio::awaitable<void> rude_service(tcp::acceptor* acceptor) {
  auto accept = acceptor->async_accept(asio::use_awaitable);
  auto socket = co_await std::move(accept);
  char buf[1024];
  auto read = socket.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
  co_await std::move(read);
  socket.set_option(asio::socket_base::linger(true, 0));
  socket.close();
}

asio::awaitable<splice_result> service_resets(test::link_pair* pair, test::agent_contexts* ctx,
                                              const std::string* payload) {
  using namespace asio::experimental::awaitable_operators;
  splice_result r;
  auto open =
      test::open_session(pair, ctx->client.native_handle(), ctx->server.native_handle(), {});
  auto s = co_await std::move(open);
  r.handshake_ec = s.client_ec ? s.client_ec : s.server_ec;
  if (r.handshake_ec) co_return r;
  auto ex = co_await asio::this_coro::executor;
  tcp::acceptor visitors(ex, loopback), service(ex, loopback);
  auto rude = rude_service(&service);
  auto near = near_side(&visitors, s.client.get());
  auto far = far_side(service.local_endpoint().port(), s.server.get());
  auto visit = visitor(visitors.local_endpoint(), payload);
  r.visitor = co_await (std::move(rude) && std::move(near) && std::move(far) && std::move(visit));
  r.near_reset = s.ends.near->is_reset();
  r.far_reset = s.ends.far->is_reset();
  r.near_streams = pair->near().stream_count();
  r.far_streams = pair->far().stream_count();
  co_return r;
}

TEST(E2eeSplice, ServiceResetResetsTheStreamAndTheVisitor) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  test::agent_contexts ctx;
  const std::string payload = test::deterministic_bytes(1u << 20, 7);
  auto r = test::run_with_links(ioc, pair, service_resets(&pair, &ctx, &payload));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->handshake_ec) << r->handshake_ec.message();
  // The kernel reports the RST once, to whichever of the visitor's read and write meets it first;
  // the other then sees EOF or a broken pipe.
  EXPECT_TRUE(r->visitor.read_ec == asio::error::connection_reset ||
              r->visitor.write_ec == asio::error::connection_reset)
      << r->visitor.read_ec.message() << ", " << r->visitor.write_ec.message();
  EXPECT_TRUE(r->near_reset);
  EXPECT_TRUE(r->far_reset);
  EXPECT_EQ(r->near_streams, 0u);
  EXPECT_EQ(r->far_streams, 0u);
}

// A visitor that speaks in turns: sends `size` bytes, reads the echo of all of them, and notes
// what the splices hold then; twice, with a small and a large message, then half-closes.
struct turns_result {
  std::size_t after_small = 0, after_large = 0;              // splice_buffer_bytes()
  std::size_t sizes_after_small = 0, sizes_after_large = 0;  // splice_read_sizes()
  bool echoed = false;
  error_code ec;
};

asio::awaitable<bool> echo_turn(tcp::socket* socket, const std::string* message, error_code* ec) {
  auto write =
      asio::async_write(*socket, asio::buffer(*message), asio::as_tuple(asio::use_awaitable));
  auto [wec, written] = co_await std::move(write);
  if (wec) {
    *ec = wec;
    co_return false;
  }
  std::string back(message->size(), '\0');
  auto read = asio::async_read(*socket, asio::buffer(back), asio::as_tuple(asio::use_awaitable));
  auto [rec, n] = co_await std::move(read);
  if (rec) *ec = rec;
  co_return !rec && back == *message;
}

asio::awaitable<turns_result> visitor_in_turns(tcp::endpoint at, const std::string* small,
                                               const std::string* large) {
  turns_result r;
  auto connect = connect_to(at, &r.ec);
  tcp::socket socket = co_await std::move(connect);
  if (r.ec) co_return r;
  auto first = echo_turn(&socket, small, &r.ec);
  bool small_ok = co_await std::move(first);
  r.after_small = splice_buffer_bytes();
  r.sizes_after_small = splice_read_sizes();
  auto second = echo_turn(&socket, large, &r.ec);
  bool large_ok = small_ok && co_await std::move(second);
  r.after_large = splice_buffer_bytes();
  r.sizes_after_large = splice_read_sizes();
  r.echoed = small_ok && large_ok;
  error_code ec;
  socket.shutdown(tcp::socket::shutdown_send, ec);
  std::vector<char> rest(1024);
  for (;;) {  // until the far side closes too
    auto read = socket.async_read_some(asio::buffer(rest), asio::as_tuple(asio::use_awaitable));
    auto [rec, n] = co_await std::move(read);
    if (rec) break;
  }
  co_return r;
}

asio::awaitable<turns_result> turns_through_splices(test::link_pair* pair,
                                                    test::agent_contexts* ctx,
                                                    std::uint16_t service_port,
                                                    const std::string* small,
                                                    const std::string* large) {
  using namespace asio::experimental::awaitable_operators;
  auto open =
      test::open_session(pair, ctx->client.native_handle(), ctx->server.native_handle(), {});
  auto s = co_await std::move(open);
  if (s.client_ec || s.server_ec)
    co_return turns_result{.ec = s.client_ec ? s.client_ec : s.server_ec};
  auto ex = co_await asio::this_coro::executor;
  tcp::acceptor acceptor(ex, loopback);
  auto near = near_side(&acceptor, s.client.get());
  auto far = far_side(service_port, s.server.get());
  auto visit = visitor_in_turns(acceptor.local_endpoint(), small, large);
  co_return co_await (std::move(near) && std::move(far) && std::move(visit));
}

// A direction reads with 4 KiB while its messages fit and with a whole record's 16 KiB once a
// read has filled its buffer, and holds no buffer at all while it waits for bytes: once each
// echo is back, all four directions of the two splices wait, and hold nothing.
TEST(E2eeSplice, BuffersAreHeldOnlyWhileBytesMoveAndGrowForLargeMessages) {
  test::tcp_server echo(test::server_mode::echo);
  asio::io_context ioc;
  test::link_pair pair(ioc);
  test::agent_contexts ctx;
  const std::string small = test::deterministic_bytes(1000, 11);
  const std::string large = test::deterministic_bytes(256 * 1024, 12);
  ASSERT_EQ(splice_read_sizes(), 0u) << "a splice of an earlier test is still running";
  auto r = test::run_with_links(ioc, pair,
                                turns_through_splices(&pair, &ctx, echo.port(), &small, &large),
                                std::chrono::seconds(30));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->ec) << r->ec.message();
  EXPECT_TRUE(r->echoed);
  EXPECT_EQ(r->after_small, 0u);
  EXPECT_EQ(r->after_large, 0u);
  EXPECT_EQ(r->sizes_after_small, 4u * 4 * 1024);  // two splices, two directions each
  EXPECT_EQ(r->sizes_after_large, 4u * 16 * 1024);
  EXPECT_EQ(splice_buffer_bytes(), 0u);  // and none when the splices ended
  EXPECT_EQ(splice_read_sizes(), 0u);
}

}  // namespace
}  // namespace burrow::e2ee
