// Races an operation against a timer: the Asio 1.26 way to put a deadline on any wait. The
// timer's wait returns its error code rather than throwing it: when the operation wins, the
// cancelled wait would otherwise throw and unwind once for every connection.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <optional>
#include <variant>

namespace burrow {

// The operation's result, or nullopt when the deadline passed first (the operation is cancelled).
template <class T>
boost::asio::awaitable<std::optional<T>> with_deadline(boost::asio::awaitable<T> op,
                                                       std::chrono::milliseconds limit) {
  using namespace boost::asio::experimental::awaitable_operators;
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, limit);
  auto r = co_await (std::move(op) ||
                     timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable)));
  if (r.index() == 0) co_return std::get<0>(std::move(r));
  co_return std::nullopt;
}

// For operations without a result: true when the operation finished first.
inline boost::asio::awaitable<bool> with_deadline(boost::asio::awaitable<void> op,
                                                  std::chrono::milliseconds limit) {
  using namespace boost::asio::experimental::awaitable_operators;
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, limit);
  auto r = co_await (std::move(op) ||
                     timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable)));
  co_return r.index() == 0;
}

}  // namespace burrow
