// A wake-up signal between coroutines on one executor: waiters sleep on a timer that never
// expires and notify() cancels every pending wait. Waiters re-check their condition in a loop,
// so a notify before a wait is never lost. The expiry is set once: setting it again would
// cancel the other waiters.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace burrow::link {

class event {
 public:
  explicit event(const boost::asio::any_io_executor& ex)
      : timer_(ex, boost::asio::steady_timer::time_point::max()) {}

  boost::asio::awaitable<void> wait() {
    co_await timer_.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  }
  void notify() { timer_.cancel(); }

 private:
  boost::asio::steady_timer timer_;
};

}  // namespace burrow::link
