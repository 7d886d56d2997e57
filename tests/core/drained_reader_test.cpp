// drained_reader (core/drained_reader.hpp) on real loopback sockets: the read right after a wait
// tries once and says would_block when the wake-up was stale, the wait after that takes the next
// edge, a read without a wait waits for bytes, and the end of the stream and a closed socket end
// both.
#include "core/drained_reader.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "core/socket_pair.hpp"

namespace burrow::drained_reader_test {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

using test::socket_pair;

struct read_result {
  std::string bytes;
  error_code ec;
};

// Runs `io` until `done()` or the deadline; false when the deadline came first.
template <typename Done>
bool run_until(asio::io_context& io, Done done, std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  while (!done() && std::chrono::steady_clock::now() < until) {
    io.restart();
    io.run_for(5ms);
  }
  return done();
}
bool run_until(asio::io_context& io, const bool& flag, std::chrono::milliseconds deadline) {
  return run_until(
      io, [&] { return flag; }, deadline);
}
bool run_until(asio::io_context& io, const std::optional<read_result>& result,
               std::chrono::milliseconds deadline) {
  return run_until(
      io, [&] { return result.has_value(); }, deadline);
}

// Starts a wait on `reader`; `done` turns true when it ends.
void start_wait(asio::io_context& io, drained_reader& reader, bool& done) {
  done = false;
  asio::co_spawn(
      io,
      [&reader, &done]() -> asio::awaitable<void> {
        co_await reader.wait_readable();
        done = true;
      },
      asio::detached);
}

// Starts a read on `reader`; `result` is set when it ends.
void start_read(asio::io_context& io, drained_reader& reader, std::optional<read_result>& result) {
  result.reset();
  asio::co_spawn(
      io,
      [&reader, &result]() -> asio::awaitable<void> {
        char buf[64];
        error_code ec;
        std::size_t n = co_await reader.read_some(asio::buffer(buf), ec);
        result = read_result{std::string(buf, n), ec};
      },
      asio::detached);
}

// Waits, then reads once; the result of the read.
read_result wait_then_read(asio::io_context& io, drained_reader& reader) {
  bool waited = false;
  start_wait(io, reader, waited);
  EXPECT_TRUE(run_until(io, waited, 5s)) << "the wait never ended";
  std::optional<read_result> got;
  start_read(io, reader, got);
  // It must end without new bytes: on a stale wake-up too, with would_block.
  EXPECT_TRUE(run_until(io, got, 5s)) << "the read after the wait waited";
  return got.value_or(read_result{"", asio::error::timed_out});
}

TEST(DrainedReader, AReadAfterAStaleWakeUpSaysWouldBlockAndTheNextWaitTakesTheNextEdge) {
  for (bool inq : {false, true}) {
    SCOPED_TRACE(inq ? "with TCP_INQ" : "without TCP_INQ");
    asio::io_context io;
    socket_pair p(io, inq);
    drained_reader reader(p.server);
    asio::write(p.client, asio::buffer(std::string("one")));
    auto first = wait_then_read(io, reader);
    EXPECT_EQ(first.bytes, "one");
    EXPECT_FALSE(first.ec) << first.ec.message();
    // Without TCP_INQ the short read could not tell that it emptied the socket: the next wait
    // ends at once and its read finds nothing. With it, the socket is known empty and the wait
    // waits.
    EXPECT_EQ(reader.drained(), inq);
    bool waited = false;
    if (!inq) {
      auto stale = wait_then_read(io, reader);
      EXPECT_EQ(stale.ec, asio::error::would_block) << stale.ec.message();
      EXPECT_TRUE(reader.drained());
    }
    start_wait(io, reader, waited);
    EXPECT_FALSE(run_until(io, waited, 50ms)) << "a wait on an empty socket ended";
    asio::write(p.client, asio::buffer(std::string("two")));
    ASSERT_TRUE(run_until(io, waited, 5s)) << "the wait missed the next bytes";
    auto second = wait_then_read(io, reader);
    EXPECT_EQ(second.bytes, "two");
    EXPECT_FALSE(second.ec) << second.ec.message();
  }
}

TEST(DrainedReader, AWaitWithBytesLeftEndsAtOnceAndTheReadTakesThem) {
  asio::io_context io;
  socket_pair p(io, true);
  drained_reader reader(p.server);
  asio::write(p.client, asio::buffer(std::string(100, 'x')));
  auto first = wait_then_read(io, reader);  // a 64-byte buffer: 36 bytes stay behind
  EXPECT_EQ(first.bytes.size(), 64u);
  EXPECT_FALSE(reader.drained());
  auto rest = wait_then_read(io, reader);
  EXPECT_EQ(rest.bytes, std::string(36, 'x'));
  EXPECT_FALSE(rest.ec) << rest.ec.message();
  EXPECT_TRUE(reader.drained());
}

TEST(DrainedReader, AReadWithoutAWaitWaitsForBytes) {
  asio::io_context io;
  socket_pair p(io, true);
  drained_reader reader(p.server);
  std::optional<read_result> got;
  start_read(io, reader, got);
  EXPECT_FALSE(run_until(io, got, 50ms)) << "a read on an empty socket ended";
  asio::write(p.client, asio::buffer(std::string("late")));
  ASSERT_TRUE(run_until(io, got, 5s)) << "the read missed the bytes";
  EXPECT_EQ(got->bytes, "late");
  EXPECT_FALSE(got->ec) << got->ec.message();
}

TEST(DrainedReader, TheEndOfTheStreamAndAClosedSocketEndTheWaitAndTheRead) {
  {
    asio::io_context io;
    socket_pair p(io, true);
    drained_reader reader(p.server);
    p.client.shutdown(tcp::socket::shutdown_send);
    auto end = wait_then_read(io, reader);
    EXPECT_EQ(end.ec, asio::error::eof) << end.ec.message();
  }
  {
    asio::io_context io;
    socket_pair p(io, true);
    drained_reader reader(p.server);
    p.server.close();
    auto closed = wait_then_read(io, reader);
    EXPECT_EQ(closed.ec, asio::error::bad_descriptor) << closed.ec.message();
  }
}

}  // namespace
}  // namespace burrow::drained_reader_test
