// Drained reads (core/drained.hpp) on real loopback sockets: receive_some says a socket is empty
// only when the kernel says so (never with a FIN still to read), a wait after that ends when the
// next bytes, a FIN or a reset come, or came before it, and waits end when cancelled or when the
// socket closes.
#include "core/drained.hpp"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/socket_pair.hpp"

namespace burrow {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

using test::socket_pair;

// Polls until `s` has bytes to read (or a FIN), within a deadline.
void await_arrival(tcp::socket& s) {
  auto until = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < until) {
    char c;
    error_code ec;
    s.receive(asio::buffer(&c, 1), tcp::socket::message_peek, ec);
    if (ec != asio::error::would_block) return;
    std::this_thread::sleep_for(1ms);
  }
  FAIL() << "nothing arrived within 5 s";
}

// Sends `text` from the client and waits until the server end has it.
void deliver(socket_pair& p, const std::string& text) {
  asio::write(p.client, asio::buffer(text));
  await_arrival(p.server);
}

// One receive_some on the server end, as text.
std::string receive_text(socket_pair& p, bool& drained, error_code& ec) {
  char buf[64];
  std::size_t n = receive_some(p.server, asio::buffer(buf), drained, ec);
  return std::string(buf, n);
}

// Reads `socket` with receive_when_ready, handing each piece to `got`, until a read ends with an
// error, which lands in `ended`.
void read_until_error(asio::io_context& io, tcp::socket& socket,
                      std::function<void(std::string_view)> got, std::optional<error_code>& ended) {
  asio::co_spawn(
      io,
      [&socket, got = std::move(got), &ended]() -> asio::awaitable<void> {
        bool drained = true;
        for (;;) {
          char buf[64];
          error_code ec;
          std::size_t n = co_await receive_when_ready(socket, asio::buffer(buf), drained, ec);
          if (ec) {
            ended = ec;
            co_return;
          }
          got(std::string_view(buf, n));
        }
      },
      asio::detached);
}

TEST(Drained, ASocketWithAFinStillToReadIsNotDrained) {
  // The case a short read gets wrong: bytes and the FIN arrive together, so epoll raises one edge
  // for both. The read that takes the bytes must not call the socket empty.
  asio::io_context io;
  socket_pair p(io, true);
  asio::write(p.client, asio::buffer(std::string("last words")));
  p.client.shutdown(tcp::socket::shutdown_send);
  await_arrival(p.server);
  std::this_thread::sleep_for(20ms);  // the FIN follows the bytes
  bool drained = true;
  error_code ec;
  EXPECT_EQ(receive_text(p, drained, ec), "last words");
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_FALSE(drained) << "called empty with the FIN still there";
  EXPECT_EQ(receive_text(p, drained, ec), "");
  EXPECT_EQ(ec, asio::error::eof);
}

TEST(Drained, AReadThatEmptiesTheSocketSaysSoAndTheWaitGetsTheNextBytes) {
  asio::io_context io;
  socket_pair p(io, true);
  deliver(p, "first");
  bool drained = false;
  error_code ec;
  EXPECT_EQ(receive_text(p, drained, ec), "first");
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_TRUE(drained);

  std::optional<error_code> waited;
  p.server.async_wait(tcp::socket::wait_read, [&](error_code e) { waited = e; });
  io.run_for(50ms);
  EXPECT_FALSE(waited) << "completed with nothing sent";
  io.restart();
  asio::write(p.client, asio::buffer(std::string("second")));
  io.run_for(5s);
  ASSERT_TRUE(waited) << "the wait never saw the bytes";
  EXPECT_FALSE(*waited) << waited->message();
  EXPECT_EQ(receive_text(p, drained, ec), "second");
}

TEST(Drained, AFinAfterTheEmptyingReadEndsTheWait) {
  asio::io_context io;
  socket_pair p(io, true);
  deliver(p, "bytes");
  bool drained = false;
  error_code ec;
  EXPECT_EQ(receive_text(p, drained, ec), "bytes");
  ASSERT_TRUE(drained);
  std::optional<error_code> waited;
  p.server.async_wait(tcp::socket::wait_read, [&](error_code e) { waited = e; });
  io.run_for(20ms);
  io.restart();
  p.client.shutdown(tcp::socket::shutdown_send);
  io.run_for(5s);
  ASSERT_TRUE(waited) << "the FIN never ended the wait";
  EXPECT_EQ(receive_text(p, drained, ec), "");
  EXPECT_EQ(ec, asio::error::eof);
}

TEST(Drained, AResetBehindTheLastBytesEndsTheWaitAfterThemAtOnce) {
  // A reset is no FIN: TCP_INQ reports 0 after the last bytes of a reset connection, so the read
  // that takes them may call the socket empty, and the reactor took the reset's edge before that
  // read. The wait after it must still end at once (a visitor that sent close_notify and reset,
  // as wrk does, once kept its stream open in the relay).
  asio::io_context io;
  socket_pair p(io, true);
  bool drained = false;
  error_code ec;
  EXPECT_EQ(receive_text(p, drained, ec), "");
  ASSERT_TRUE(drained);
  std::optional<error_code> waited;
  p.server.async_wait(tcp::socket::wait_read, [&](error_code e) { waited = e; });
  asio::write(p.client, asio::buffer(std::string("last words")));
  p.client.set_option(asio::socket_base::linger(true, 0));
  p.client.close();  // an RST right behind the bytes
  std::this_thread::sleep_for(20ms);
  io.run_for(5s);  // one epoll_wait takes the edge of both
  ASSERT_TRUE(waited) << "the bytes never ended the wait";
  EXPECT_EQ(receive_text(p, drained, ec), "last words");
  ASSERT_FALSE(ec) << ec.message();

  // Whatever the read said, the wait ends at once and the read after it finds the reset.
  io.restart();
  waited.reset();
  p.server.async_wait(tcp::socket::wait_read, [&](error_code e) { waited = e; });
  io.run_for(1s);
  ASSERT_TRUE(waited) << "the wait after the reset's last bytes never ended";
  EXPECT_EQ(receive_text(p, drained, ec), "");
  EXPECT_EQ(ec, asio::error::connection_reset) << ec.message();
}

TEST(Drained, ReceiveWhenReadyWaitsForBytesThenTheFin) {
  asio::io_context io;
  socket_pair p(io, true);
  std::vector<std::string> got;
  std::optional<error_code> ended;
  read_until_error(
      io, p.server, [&](std::string_view piece) { got.emplace_back(piece); }, ended);
  io.run_for(30ms);
  EXPECT_TRUE(got.empty());
  EXPECT_FALSE(ended) << "ended with nothing sent";
  io.restart();
  asio::write(p.client, asio::buffer(std::string("one")));
  io.run_for(30ms);
  io.restart();
  asio::write(p.client, asio::buffer(std::string("two")));
  p.client.shutdown(tcp::socket::shutdown_send);
  auto until = std::chrono::steady_clock::now() + 5s;
  while (!ended && std::chrono::steady_clock::now() < until) {
    io.run_for(10ms);
    io.restart();
  }
  ASSERT_TRUE(ended) << "the FIN never ended the reads";
  EXPECT_EQ(*ended, asio::error::eof);
  std::string all;
  for (auto& g : got) all += g;
  EXPECT_EQ(all, "onetwo");
}

TEST(Drained, BytesLeftBehindAreNotCalledEmpty) {
  asio::io_context io;
  socket_pair p(io, true);
  deliver(p, "0123456789");
  std::this_thread::sleep_for(20ms);  // all ten, not the first segment alone
  char buf[4];
  bool drained = true;
  error_code ec;
  std::size_t n = receive_some(p.server, asio::buffer(buf), drained, ec);
  EXPECT_EQ(n, 4u);
  EXPECT_FALSE(drained) << "6 bytes were still there";
}

TEST(Drained, WithoutTheReportOnlyAnEmptyReadSaysDrained) {
  asio::io_context io;
  socket_pair p(io);  // no TCP_INQ: a read cannot tell
  deliver(p, "abc");
  bool drained = true;
  error_code ec;
  EXPECT_EQ(receive_text(p, drained, ec), "abc");
  EXPECT_FALSE(drained);
  EXPECT_EQ(receive_text(p, drained, ec), "");
  EXPECT_EQ(ec, asio::error::would_block);
  EXPECT_TRUE(drained);
}

TEST(Drained, AReportingSocketCanBeAskedDirectly) {
  asio::io_context io;
  socket_pair p(io);
  EXPECT_TRUE(report_queued_bytes(p.client));
  p.client.close();
  EXPECT_FALSE(report_queued_bytes(p.client));
  char buf[4];
  bool drained = true;
  error_code ec;
  receive_some(p.client, asio::buffer(buf), drained, ec);
  EXPECT_EQ(ec, asio::error::bad_descriptor);
  EXPECT_FALSE(drained);
}

// Runs `io` until `done` is set, or for 5 s.
template <typename T>
void run_until_set(asio::io_context& io, const std::optional<T>& done) {
  auto until = std::chrono::steady_clock::now() + 5s;
  while (!done && std::chrono::steady_clock::now() < until) {
    io.restart();
    io.run_for(10ms);
  }
}

TEST(Drained, ReceiveWhenReadyEndsWithTheResetBehindTheLastBytes) {
  asio::io_context io;
  socket_pair p(io, true);
  asio::write(p.client, asio::buffer(std::string("last words")));
  p.client.set_option(asio::socket_base::linger(true, 0));
  p.client.close();
  await_arrival(p.server);
  std::string got;
  std::optional<error_code> ended;
  read_until_error(
      io, p.server, [&](std::string_view piece) { got.append(piece); }, ended);
  run_until_set(io, ended);
  ASSERT_TRUE(ended) << "the reset never ended the reads";
  EXPECT_EQ(*ended, asio::error::connection_reset) << ended->message();
  EXPECT_EQ(got, "last words");
}

TEST(Drained, BytesWhoseEdgeTheReactorTookBeforeTheWaitEndItAtOnce) {
  // Bytes that come between the read that emptied the socket and the wait after it: the reactor
  // may have taken their edge already, with no operation to give it to. The wait still sees them.
  asio::io_context io;
  socket_pair p(io, true);
  deliver(p, "first");
  bool drained = false;
  error_code ec;
  EXPECT_EQ(receive_text(p, drained, ec), "first");
  ASSERT_TRUE(drained);
  deliver(p, "second");
  asio::steady_timer timer(io, 20ms);  // the reactor's epoll_wait reports the socket meanwhile
  timer.async_wait([](error_code) {});
  io.run();
  io.restart();
  std::optional<error_code> waited;
  p.server.async_wait(tcp::socket::wait_read, [&](error_code e) { waited = e; });
  io.run_for(1s);
  ASSERT_TRUE(waited) << "bytes that came before the wait were never reported";
  EXPECT_FALSE(*waited) << waited->message();
  EXPECT_EQ(receive_text(p, drained, ec), "second");
}

TEST(Drained, AWaitInARaceWithATimerIsCancelled) {
  using namespace asio::experimental::awaitable_operators;
  asio::io_context io;
  socket_pair p(io, true);
  std::optional<int> winner;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        asio::steady_timer timer(io, 50ms);
        auto r = co_await (
            p.server.async_wait(tcp::socket::wait_read, asio::as_tuple(asio::use_awaitable)) ||
            timer.async_wait(asio::as_tuple(asio::use_awaitable)));
        winner = static_cast<int>(r.index());
      },
      asio::detached);
  io.run_for(5s);
  ASSERT_TRUE(winner) << "the race never ended: the wait ignored its cancellation";
  EXPECT_EQ(*winner, 1);
}

TEST(Drained, AWaitEndsWhenTheSocketIsClosed) {
  asio::io_context io;
  socket_pair p(io, true);
  std::optional<error_code> waited;
  p.server.async_wait(tcp::socket::wait_read, [&](error_code ec) { waited = ec; });
  io.run_for(20ms);
  EXPECT_FALSE(waited) << "completed with nothing sent";
  io.restart();
  p.server.close();
  io.run_for(5s);
  ASSERT_TRUE(waited);
  EXPECT_EQ(*waited, asio::error::operation_aborted);

  // On the closed socket, a read ends at once with an error.
  std::optional<error_code> read;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        char buf[8];
        bool drained = true;
        error_code ec;
        co_await receive_when_ready(p.server, asio::buffer(buf), drained, ec);
        read = ec;
      },
      asio::detached);
  io.restart();
  io.run_for(1s);
  ASSERT_TRUE(read) << "a read on a closed socket never ended";
  EXPECT_TRUE(*read);
}
}  // namespace
}  // namespace burrow
