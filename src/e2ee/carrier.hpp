// What a secure_stream's TLS records travel over: a link stream (end to end between `burrow
// connect` and the agent, and the agent's end of a blind share URL) or a TCP socket (the relay's
// end of an inspected share URL).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <memory>

#include "proto/frame.hpp"

namespace burrow::link {
class stream;
}

namespace burrow::e2ee {

// What a read of a whole TLS record needs: 16 KiB of plaintext, its header and tag.
inline constexpr std::size_t whole_record_read = 16 * 1024 + 512;

// At most one read (wait_readable, then read_some) and one write at a time, on the carrier's
// executor.
class carrier {
 public:
  virtual ~carrier() = default;
  // Returns once a read would not wait: bytes, the peer's half-close, a reset or an error. Holds
  // no buffer while it waits. Over a socket the read right after it may end with would_block,
  // reading nothing, when the socket was not known to be empty but was (a stale wake-up): wait
  // again.
  virtual boost::asio::awaitable<void> wait_readable() = 0;
  // Bytes, or eof after the peer's half-close, or an error (connection_reset after a reset); or
  // would_block right after wait_readable, as above.
  virtual boost::asio::awaitable<std::size_t> read_some(boost::asio::mutable_buffer b,
                                                        boost::system::error_code& ec) = 0;
  // Sends some of `b` (waiting for room or credit as needed) and returns how much.
  virtual boost::asio::awaitable<std::size_t> write_some(boost::asio::const_buffer b,
                                                         boost::system::error_code& ec) = 0;
  virtual void shutdown_send() = 0;  // half-close toward the peer
  // Ends it at once (a stream reset, a socket closed with an RST); pending operations fail.
  virtual void reset(proto::stream_status why) = 0;
  virtual bool is_reset() const = 0;
  // What the first reads ask for: less than a whole record, since a read's buffer stays with
  // the session while it is busy (over a link stream until the link's keeper finds it quiet, over
  // a socket for as long as the connection lasts), and a request or a small response fits;
  // secure_stream grows it after a read that filled it.
  virtual std::size_t first_read_size() const = 0;
};

std::unique_ptr<carrier> make_stream_carrier(std::shared_ptr<link::stream> stream);
// The socket must outlive the carrier; it is made non-blocking.
std::unique_ptr<carrier> make_socket_carrier(boost::asio::ip::tcp::socket& socket);

}  // namespace burrow::e2ee
