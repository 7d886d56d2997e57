// with_deadline (core/deadline.hpp): the operation's result when it finishes first, nothing when
// the deadline passes first, and then the operation is cancelled, not left running.
#include "core/deadline.hpp"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <optional>

namespace burrow {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// Waits `wait` on a timer of its own; says whether the wait was cancelled, and answers 42.
asio::awaitable<int> slow_answer(std::chrono::milliseconds wait, bool* cancelled) {
  asio::steady_timer timer(co_await asio::this_coro::executor, wait);
  auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  *cancelled = ec == asio::error::operation_aborted;
  co_return 42;
}

asio::awaitable<void> slow_nothing(std::chrono::milliseconds wait, bool* cancelled) {
  co_await slow_answer(wait, cancelled);
}

// Runs `body` to its end; fails the test if it takes longer than 5 s.
template <class Body>
void run(Body body) {
  asio::io_context io;
  bool done = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await body();
        done = true;
      },
      asio::detached);
  io.run_for(5s);
  EXPECT_TRUE(done) << "did not finish within 5 s";
}

TEST(Deadline, TheOperationFirstGivesItsResult) {
  bool cancelled = true;
  std::optional<int> got;
  auto started = std::chrono::steady_clock::now();
  run([&]() -> asio::awaitable<void> {
    got = co_await with_deadline(slow_answer(1ms, &cancelled), 4s);
  });
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, 42);
  EXPECT_FALSE(cancelled);
  // The deadline's timer is cancelled with it: nothing waits out the 4 s.
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
}

TEST(Deadline, TheDeadlineFirstCancelsTheOperation) {
  bool cancelled = false;
  std::optional<int> got = 7;
  auto started = std::chrono::steady_clock::now();
  run([&]() -> asio::awaitable<void> {
    got = co_await with_deadline(slow_answer(4s, &cancelled), 20ms);
  });
  EXPECT_FALSE(got.has_value());
  EXPECT_TRUE(cancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
}

TEST(Deadline, AnOperationWithoutAResultSaysWhichWasFirst) {
  bool first_cancelled = true, second_cancelled = false, first = false, second = true;
  run([&]() -> asio::awaitable<void> {
    first = co_await with_deadline(slow_nothing(1ms, &first_cancelled), 4s);
    second = co_await with_deadline(slow_nothing(4s, &second_cancelled), 20ms);
  });
  EXPECT_TRUE(first);
  EXPECT_FALSE(first_cancelled);
  EXPECT_FALSE(second);
  EXPECT_TRUE(second_cancelled);
}

}  // namespace
}  // namespace burrow
