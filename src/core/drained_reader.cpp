// Drained reads for a reader that waits first (core/drained_reader.hpp).
#include "core/drained_reader.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/drained.hpp"

namespace burrow {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

asio::awaitable<void> at_once() {
  co_return;
}

}  // namespace

// Neither function is a coroutine of its own: each returns the awaitable it passes the call to,
// one frame less on every wait and read.
asio::awaitable<void> drained_reader::wait_readable() {
  woken_ = true;
  // Not known to be empty: the read finds out, without a trip through the reactor's queue.
  if (!drained_) return at_once();
  drained_ = false;
  return socket_.async_wait(asio::ip::tcp::socket::wait_read,
                            asio::redirect_error(asio::use_awaitable, wait_error_));
}

asio::awaitable<std::size_t> drained_reader::read_some(asio::mutable_buffer buffer,
                                                       error_code& ec) {
  if (woken_) return read_once(buffer, ec);
  return receive_when_ready(socket_, buffer, drained_, ec);
}

asio::awaitable<std::size_t> drained_reader::read_once(asio::mutable_buffer buffer,
                                                       error_code& ec) {
  woken_ = false;
  co_return receive_some(socket_, buffer, drained_, ec);
}

}  // namespace burrow
