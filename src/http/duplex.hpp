// One side of a proxied HTTP connection, whatever carries it: a local TCP socket, a link stream,
// or TLS over either. The HTTP proxy reads and writes through this and never knows which.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <memory>

namespace burrow::e2ee {
class secure_stream;
}
namespace burrow::link {
class stream;
}

namespace burrow::http {

// At most one read (wait_readable counts as one) and one write may be in flight at once.
// read_some ends with eof after the peer's half-close.
class duplex {
 public:
  virtual ~duplex() = default;
  // Whether a read would not wait: bytes in hand, the peer's half-close, an error. False may also
  // mean "cannot tell without a read".
  virtual bool readable_now() const = 0;
  // Returns once a read would not wait, holding no buffer meanwhile: a reader that has nothing
  // in hand can give its buffer back first. A wait that fails leaves the error for the read.
  // The read right after it may end with would_block, reading nothing, when the wake-up was
  // stale (epoll's edge for bytes an earlier read already took): wait again.
  virtual boost::asio::awaitable<void> wait_readable() = 0;
  virtual boost::asio::awaitable<std::size_t> read_some(boost::asio::mutable_buffer b,
                                                        boost::system::error_code& ec) = 0;
  virtual boost::asio::awaitable<void> write_all(boost::asio::const_buffer b,
                                                 boost::system::error_code& ec) = 0;
  // Half-close: the peer reads EOF; reading goes on.
  virtual boost::asio::awaitable<void> shutdown_send(boost::system::error_code& ec) = 0;
  // Ends the connection at once (RST or stream reset); pending operations fail.
  virtual void abort() = 0;
  // Between messages, or before a wait: buffers of the carrier's own that no operation in flight
  // is using go back (TLS over a socket; the others hold none, or a keeper frees them).
  virtual void rest() {}
};

// A TCP socket (the local service). The socket must outlive the duplex.
std::unique_ptr<duplex> make_tcp_duplex(boost::asio::ip::tcp::socket& socket);
// TLS inside a link stream (blind mode at the agent) or over a socket (inspect mode at the
// relay), handshake done. With `truncation_is_eof`, a peer that closes TCP without close_notify
// ends its side as EOF does (a visitor that just closes after its last request is common, and the
// HTTP framing says whether a message was cut short).
std::unique_ptr<duplex> make_tls_duplex(e2ee::secure_stream& tls, bool truncation_is_eof = false);
// A link stream carrying HTTP in the clear (after the relay ended TLS, or plain HTTP).
std::unique_ptr<duplex> make_stream_duplex(std::shared_ptr<link::stream> stream);

}  // namespace burrow::http
