// TLS inside a link stream, driven through in-memory buffers rather than asio::ssl::stream so that
// each side can half-close: close_notify goes out, then the stream's FIN, and reading goes on.
// The relay forwarding the stream only ever sees ciphertext. The same engine serves TLS over a
// TCP socket (an inspected share URL at the relay), holding only the buffers its traffic needs.
#pragma once

#include <openssl/ssl.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "e2ee/carrier.hpp"
#include "e2ee/contexts.hpp"
#include "link/byte_buffer.hpp"
#include "link/event.hpp"
#include "link/record_protection.hpp"
#include "proto/frame.hpp"
#include "tls/buffer_bio.hpp"

namespace burrow::link {
class stream;
}

namespace burrow::e2ee {

enum class tls_role { client, server };

// One reader and one writer coroutine may use it at once, on the stream's executor. Destroy it
// there, and only when none of its operations is pending (a deadline that cancels handshake() has
// already ended it, since with_deadline waits for the cancelled operation). While busy it keeps
// OpenSSL's record buffers and its own; once the stream has been quiet for a second the link's
// keeper has it give them back (link::stream::on_quiet).
class secure_stream {
 public:
  // `required_alpn`: the protocol both sides must have agreed on (the end-to-end one by
  // default); empty accepts any outcome, as a web server does.
  secure_stream(SSL_CTX* ctx, std::shared_ptr<link::stream> s, tls_role role,
                std::string_view required_alpn = alpn_protocol);
  // Over a TCP socket, which must outlive this. OpenSSL gives its record buffers back whenever
  // they are empty (no keeper tells a socket's session that it is quiet), and reads start small.
  secure_stream(SSL_CTX* ctx, boost::asio::ip::tcp::socket& socket, tls_role role,
                std::string_view required_alpn);
  // A stream keyed from an end-to-end session (session_keys::stream): there is no handshake and
  // no OpenSSL state; its own records start with the first byte either end sends.
  secure_stream(std::shared_ptr<link::stream> s, std::unique_ptr<link::record_protection> keys);
  ~secure_stream();  // frees the SSL and takes its quiet hook off the stream
  secure_stream(const secure_stream&) = delete;
  secure_stream& operator=(const secure_stream&) = delete;

  // Null once a server's session on its own records (see own_records()) has read or written,
  // and once a client's has read the server's first own record: OpenSSL's state for it is freed
  // then. Look at it after the handshake, before any I/O.
  SSL* native_handle() { return ssl_; }
  // Bytes of buffer this session holds itself, besides OpenSSL's record buffers (for tests).
  std::size_t buffer_capacity() const {
    return io_.in.capacity() + io_.out.capacity() + sending_.capacity() + opened_.capacity();
  }
  // After the handshake: whether the session runs on its own records rather than OpenSSL's:
  // only end to end with ALPN burrow-e2ee/2 (docs/protocol.md section 6a), where both ends are
  // Burrow. A web server's visitors, of every make, stay on OpenSSL's records.
  bool own_records() const { return own_ != nullptr; }
  // The link stream it runs over; only for a secure_stream made over one.
  link::stream& stream() { return *stream_; }

  // Runs the handshake; a client's caller has set verification, SNI and session on
  // native_handle() first. Both sides must agree on ALPN burrow-e2ee/2 or burrow-e2ee/1; with
  // /2 the records after the handshake are the session's own (see own_records()).
  boost::asio::awaitable<boost::system::error_code> handshake();

  // Plaintext in. ec is asio::error::eof after the peer's close_notify and its stream FIN; a FIN
  // without close_notify is ssl::error::stream_truncated; a reset stream is connection_reset.
  boost::asio::awaitable<std::size_t> read_some(boost::asio::mutable_buffer b,
                                                boost::system::error_code& ec);
  // Whether read_some would start without waiting for the carrier: plaintext or ciphertext in
  // hand, the peer's close, or a failure to report.
  bool readable_now() const;
  // For a reader that holds no buffer while it waits: returns once the carrier has bytes, its
  // peer's half-close or a reset (read_some then says which). Call when !readable_now(), as the
  // only reader. Over a socket the wake-up may be stale (an edge for bytes already read, or a
  // socket not known to be empty that is): the read after it then ends with would_block, reading
  // nothing, rather than waiting with the reader's buffer; wait again.
  boost::asio::awaitable<void> wait_readable();
  // Encrypts and sends all of `b`, waiting for the stream's credit as needed.
  boost::asio::awaitable<void> write_all(boost::asio::const_buffer b,
                                         boost::system::error_code& ec);
  // Half-close: sends close_notify, then the stream's FIN; reading may go on.
  boost::asio::awaitable<void> shutdown_send(boost::system::error_code& ec);
  // Resets the stream; pending and later operations end with an error.
  void abort(proto::stream_status why);
  // Between messages, on the session's thread: over a socket, which has no link keeper to say
  // the session is quiet, gives back the buffers no operation in flight is using (the next bytes
  // take a spare buffer again). Over a link stream it does nothing: the keeper does it.
  void rest() {
    if (!stream_) release_buffers();
  }

 private:
  boost::asio::awaitable<boost::system::error_code> feed();  // more ciphertext into io_.in
  boost::asio::awaitable<void> wait_no_flush();
  boost::asio::awaitable<void> flush(boost::system::error_code& ec);
  // flush()'s checks once no flush runs: whether there is anything to send and it may go (when
  // it may not, `ec` says why).
  bool may_drain(boost::system::error_code& ec) const;
  boost::asio::awaitable<void> drain(boost::system::error_code& ec);
  boost::asio::awaitable<boost::system::error_code> await_peer_fin();
  boost::asio::awaitable<std::size_t> read_tls(boost::asio::mutable_buffer b,
                                               boost::system::error_code& ec);
  boost::asio::awaitable<std::size_t> read_own(boost::asio::mutable_buffer b,
                                               boost::system::error_code& ec);
  boost::system::error_code open_own(boost::asio::mutable_buffer b, std::size_t& produced);
  boost::system::error_code take_ticket();
  boost::system::error_code closed_by_peer(boost::system::error_code ec);
  boost::asio::awaitable<void> send_alert_now(link::record_alert alert);
  boost::system::error_code seal(const std::uint8_t* p, std::size_t n);
  boost::system::error_code failed(int ssl_error);
  void start(SSL_CTX* ctx, tls_role role);  // the SSL and its BIO, for both constructors
  void release_buffers();                   // the stream's quiet hook, and rest()
  void release_own_buffers();               // release_buffers() but OpenSSL's
  void drop_session();                      // frees the SSL of a session on its own records

  std::shared_ptr<link::stream> stream_;  // null over a socket
  std::unique_ptr<carrier> carrier_;
  std::size_t read_size_ = 0;  // what the next feed reads at most
  SSL* ssl_ = nullptr;
  tls::bio_buffers io_;        // ciphertext between OpenSSL and the stream
  link::byte_buffer sending_;  // swapped out of io_.out; the flusher hands it to the stream
  bool feeding_ = false;       // a stream read is filling io_.in's free space
  bool woken_ = false;  // wait_readable() was called: a feed that finds nothing says would_block
  std::optional<link::event> flushed_;  // made on first use, on the stream's executor
  bool flushing_ = false;
  std::string_view required_alpn_;
  bool handshake_done_ = false;
  bool shutdown_sent_ = false;
  bool peer_fin_ = false;
  boost::system::error_code broken_;  // the first fatal error; every later operation reports it
  // Own records (ALPN burrow-e2ee/2): keys from this session's exporter, used after the handshake.
  std::unique_ptr<link::record_protection> own_;
  bool tickets_pending_ = false;  // a client: OpenSSL's tickets may precede the first own record
  bool drop_session_ = false;     // a server's records are ours: the SSL goes at its first I/O
  link::byte_buffer opened_;  // plaintext opened but not yet read (a read smaller than a record)
  bool peer_closed_ = false;  // the peer's own close_notify has arrived
};

}  // namespace burrow::e2ee
