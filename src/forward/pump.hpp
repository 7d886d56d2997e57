// Bytes both ways between two TCP sockets, for `burrow forward`: TCP's half-close carried over
// (one side's EOF shuts the other's sending), and the first error ends both.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <cstdint>

namespace burrow::forward {

struct pump_result {
  std::uint64_t bytes_in = 0;   // from the visitor to the target
  std::uint64_t bytes_out = 0;  // back
  bool failed = false;          // an error (or a cancel) ended it: both sockets closed with an RST
};

// Runs until both directions have ended. Both sockets must be connected, on the same executor;
// they are put in non-blocking mode. A direction holds a read buffer only while it has bytes to
// move (core/read_buffer.hpp).
boost::asio::awaitable<pump_result> pump(boost::asio::ip::tcp::socket& visitor,
                                         boost::asio::ip::tcp::socket& target);

// What every pump in this process holds for its reads right now.
std::size_t pump_buffer_bytes();

}  // namespace burrow::forward
