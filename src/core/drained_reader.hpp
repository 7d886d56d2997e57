// One socket's reads for a reader that waits for bytes before it takes a buffer to read them
// into: the HTTP proxy over a TCP socket, and TLS over a visitor's socket (e2ee/carrier.hpp).
//
// The read after wait_readable() tries one recv and ends with would_block when that finds
// nothing, so that its caller waits again holding no buffer. A socket not known to be empty may
// be: without TCP_INQ a read that emptied it cannot tell, and a wake-up may be for bytes an
// earlier read already took. Any other read waits until bytes come, with drained reads
// (core/drained.hpp).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>

namespace burrow {

class drained_reader {
 public:
  // `socket` must be in non-blocking mode and outlive the reader.
  explicit drained_reader(boost::asio::ip::tcp::socket& socket) : socket_(socket) {}

  // Completes when the socket may be readable. An error (a closed socket, a cancelled wait) is
  // left for the read after it to find.
  boost::asio::awaitable<void> wait_readable();

  // Bytes, eof or an error, as async_read_some gives; right after wait_readable(), would_block
  // too.
  boost::asio::awaitable<std::size_t> read_some(boost::asio::mutable_buffer buffer,
                                                boost::system::error_code& ec);

  // The last read left the socket empty: bytes come only with epoll's next edge.
  bool drained() const { return drained_; }

 private:
  boost::asio::awaitable<std::size_t> read_once(boost::asio::mutable_buffer buffer,
                                                boost::system::error_code& ec);

  boost::asio::ip::tcp::socket& socket_;
  bool drained_ = true;  // as receive_when_ready's callers start: a read first waits for readiness
  bool woken_ = false;   // wait_readable() returned: the next read does not wait
  boost::system::error_code wait_error_;  // the read that follows finds the same error itself
};

}  // namespace burrow
