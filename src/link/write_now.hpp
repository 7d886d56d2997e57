// Writing without a trip through the scheduler. asio::async_write sends at once when the socket
// has room, but its completion is posted, and before the next posted handler runs the scheduler
// polls epoll again (epoll_wait with a zero timeout): one system call more per write. write_now
// makes that one send itself and returns what it took; the caller hands the rest, if any, to
// asio::async_write as before.
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <vector>

namespace burrow::link {

// One non-blocking send (the socket must be in non-blocking mode, `non_blocking(true)`): the
// bytes the socket took, 0 with no error when it had no room, or an error.
template <typename Socket, typename Buffers>
std::size_t write_now(Socket& socket, const Buffers& buffers, boost::system::error_code& ec) {
  std::size_t n = socket.write_some(buffers, ec);
  if (ec == boost::asio::error::would_block || ec == boost::asio::error::try_again) {
    ec = {};
    return 0;
  }
  return n;
}

// Drops the first n bytes of a gather list (whole buffers, then the front of the next).
inline void drop_front(std::vector<boost::asio::const_buffer>& buffers, std::size_t n) {
  std::size_t whole = 0;
  while (whole < buffers.size() && n >= buffers[whole].size()) n -= buffers[whole++].size();
  buffers.erase(buffers.begin(), buffers.begin() + static_cast<std::ptrdiff_t>(whole));
  if (!buffers.empty()) buffers.front() += n;
}

}  // namespace burrow::link
