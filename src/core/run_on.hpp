// Runs an operation on another executor and resumes the caller on its own: how a coroutine on
// one thread works with an object that belongs to another. On the caller's own executor it is a
// plain co_await, with no hop.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace burrow {

template <class T>
boost::asio::awaitable<T> run_on(boost::asio::any_io_executor ex, boost::asio::awaitable<T> op) {
  auto here = co_await boost::asio::this_coro::executor;
  if (here == ex) co_return co_await std::move(op);
  auto hop = boost::asio::co_spawn(ex, std::move(op), boost::asio::use_awaitable);
  co_return co_await std::move(hop);
}

}  // namespace burrow
