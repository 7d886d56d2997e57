// The TLS engine over a link stream: OpenSSL reads and writes two byte buffers through
// buffer_bio, and one flush at a time moves what it wrote to the stream, in order and exactly once.
#include "e2ee/secure_stream.hpp"

#include <openssl/err.h>

#include <algorithm>
#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/this_coro.hpp>
#include <climits>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "e2ee/contexts.hpp"
#include "link/stream.hpp"
#include "proto/wire_unit.hpp"
#include "tls/buffer_bio.hpp"
#include "tls/certs.hpp"
#include "tls/session_error.hpp"

namespace burrow::e2ee {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

constexpr std::size_t max_plaintext_record = 16 * 1024;
// Encrypting this much (three records) before a flush turns a large write into few link frames,
// each within the link's default max_frame of 64 KiB, and bounds what waits in memory.
constexpr std::size_t flush_threshold = 48 * 1024;

std::string_view selected_alpn(SSL* ssl) {
  const unsigned char* p = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl, &p, &len);
  return {reinterpret_cast<const char*>(p), len};
}

// The end-to-end protocol is either version; any other requirement is one protocol exactly.
bool alpn_agreed(SSL* ssl, std::string_view required) {
  if (required.empty()) return true;
  const auto selected = selected_alpn(ssl);
  return selected == required || (required == alpn_protocol && selected == alpn_own_records);
}

}  // namespace

secure_stream::secure_stream(SSL_CTX* ctx, std::shared_ptr<link::stream> s, tls_role role,
                             std::string_view required_alpn)
    : stream_(std::move(s)), required_alpn_(required_alpn) {
  if (!ctx || !stream_) throw std::invalid_argument("secure_stream: null context or stream");
  carrier_ = make_stream_carrier(stream_);
  read_size_ = carrier_->first_read_size();
  start(ctx, role);
  // During the handshake OpenSSL gives its record buffers back between flights (a burst of
  // visitors' handshakes waits mostly for their next flight). After it, a busy end-to-end session
  // on OpenSSL's records keeps them (see handshake()); a quiet one gives them back, with ours,
  // when the link's keeper says so.
  SSL_set_mode(ssl_, SSL_MODE_RELEASE_BUFFERS);
  stream_->on_quiet([this] { release_buffers(); });
}

secure_stream::secure_stream(SSL_CTX* ctx, asio::ip::tcp::socket& socket, tls_role role,
                             std::string_view required_alpn)
    : required_alpn_(required_alpn) {
  if (!ctx) throw std::invalid_argument("secure_stream: null context");
  carrier_ = make_socket_carrier(socket);
  read_size_ = carrier_->first_read_size();
  start(ctx, role);
  SSL_set_mode(ssl_, SSL_MODE_RELEASE_BUFFERS);
}

secure_stream::secure_stream(std::shared_ptr<link::stream> s,
                             std::unique_ptr<link::record_protection> keys)
    : stream_(std::move(s)), own_(std::move(keys)) {
  if (!stream_ || !own_) throw std::invalid_argument("secure_stream: null stream or keys");
  carrier_ = make_stream_carrier(stream_);
  read_size_ = carrier_->first_read_size();
  handshake_done_ = true;
  stream_->on_quiet([this] { release_buffers(); });
}

void secure_stream::start(SSL_CTX* ctx, tls_role role) {
  ssl_ = SSL_new(ctx);
  if (!ssl_) tls::throw_openssl_error("SSL_new failed");
  BIO* bio = tls::new_buffer_bio(&io_);
  if (!bio) {
    SSL_free(ssl_);
    tls::throw_openssl_error("cannot make the end-to-end BIO");
  }
  SSL_set_bio(ssl_, bio, bio);  // one BIO both ways; the SSL takes its single reference
  if (role == tls_role::client)
    SSL_set_connect_state(ssl_);
  else
    SSL_set_accept_state(ssl_);
}

secure_stream::~secure_stream() {
  if (stream_) stream_->on_quiet({});
  SSL_free(ssl_);
}

// Between OpenSSL calls, on the stream's thread: only what no pending operation uses.
void secure_stream::release_buffers() {
  if (ssl_) SSL_free_buffers(ssl_);  // refuses while part of a record is buffered
  release_own_buffers();
}

void secure_stream::release_own_buffers() {
  if (io_.in.empty() && !feeding_) io_.in.release();
  if (opened_.empty()) opened_.release();
  if (!flushing_) {
    if (io_.out.empty()) io_.out.release();
    if (sending_.empty()) sending_.release();
  }
}

// Called right after a failed OpenSSL call, before anything else can touch this thread's error
// queue. Every failure but "needs more input" is fatal for the session.
error_code secure_stream::failed(int ssl_error) {
  error_code ec = tls::session_error(ssl_error);
  if (!broken_) broken_ = ec;
  return ec;
}

asio::awaitable<error_code> secure_stream::handshake() {
  if (handshake_done_) co_return broken_;  // a keyed stream's, or a second call
  while (!handshake_done_) {
    if (broken_) co_return broken_;
    tls::clear_error_queue();
    int r = SSL_do_handshake(ssl_);
    int err = r == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl_, r);
    error_code failure;
    if (err != SSL_ERROR_NONE && err != SSL_ERROR_WANT_READ) failure = failed(err);
    // Our next flight, or the alert that tells the peer why we stopped.
    error_code ec;
    auto flushed = flush(ec);
    co_await std::move(flushed);
    if (failure) co_return failure;
    if (ec) co_return ec;
    if (r == 1) break;
    // The wait for the peer's next flight holds none of our buffers: in a burst of visitors,
    // most handshakes are waiting there at any moment (the next flight takes spares again).
    release_own_buffers();
    auto fed = feed();
    ec = co_await std::move(fed);
    if (ec) co_return ec;
  }
  if (!alpn_agreed(ssl_, required_alpn_)) {
    if (!broken_) broken_ = asio::error::no_protocol_option;
    co_return broken_;
  }
  if (required_alpn_ == alpn_protocol && selected_alpn(ssl_) == alpn_own_records) {
    const bool client = !SSL_is_server(ssl_);
    try {
      own_ = link::record_protection::from_session(ssl_, client, own_records_label);
    } catch (const std::exception&) {
      if (!broken_) broken_ = link::record_error::crypto_failed;
      co_return broken_;
    }
    // The server's session tickets follow its Finished on OpenSSL's records; its own records
    // come after them. The client's first own record follows its Finished at once.
    tickets_pending_ = client;
    drop_session_ = !client;  // its tickets have gone, and it caches no sessions
  }
  // On OpenSSL's records over a link stream, keeping the record buffers saves two 17 KiB
  // allocations per request; end to end, where a stream is one visitor's connection, it does.
  // A web server's visitors give them back after each record: at 1,000 keep-alive visitors the
  // blind agent's heap is 44 MB instead of 77, for 4 % more instructions per request. On our own
  // records, OpenSSL reads at most a client's tickets from here on.
  const bool web_server = SSL_is_server(ssl_) && required_alpn_.empty();
  if (stream_ && !own_ && !web_server) SSL_clear_mode(ssl_, SSL_MODE_RELEASE_BUFFERS);
  handshake_done_ = true;
  co_return error_code{};
}

// A server on its own records (the agent's end of burrow-e2ee/2) needs nothing more of OpenSSL's
// session: its tickets left with the handshake, they are stateless, and the end-to-end context
// caches no sessions, so an SSL freed without a shutdown costs no resumption. Its SSL (the
// connection's state, a copy of the context's certificates, OpenSSL's two record contexts: some
// 13 KiB) goes at the first read or write, after the caller has looked at native_handle(). A
// client's goes once the server's first own
// record has come, marked as shut down first so that its cached session stays resumable
// (take_ticket).
void secure_stream::drop_session() {
  drop_session_ = false;
  SSL_free(ssl_);
  ssl_ = nullptr;
}

asio::awaitable<std::size_t> secure_stream::read_some(asio::mutable_buffer b, error_code& ec) {
  ec = {};
  // Own records go straight to read_own, which the caller awaits: no coroutine frame of ours.
  if (own_ && b.size() > 0) {
    if (drop_session_) drop_session();
    return read_own(b, ec);
  }
  return read_tls(b, ec);
}

bool secure_stream::readable_now() const {
  return broken_ || peer_fin_ || peer_closed_ || !opened_.empty() || !io_.in.empty() ||
         (ssl_ && (SSL_has_pending(ssl_) || (SSL_get_shutdown(ssl_) & SSL_RECEIVED_SHUTDOWN)));
}

asio::awaitable<void> secure_stream::wait_readable() {
  woken_ = true;
  return carrier_->wait_readable();  // the carrier's own wait: no coroutine frame of ours
}

// Reading through OpenSSL's records (and a read of nothing).
asio::awaitable<std::size_t> secure_stream::read_tls(asio::mutable_buffer b, error_code& ec) {
  if (b.size() == 0) co_return 0;
  const std::size_t want = std::min<std::size_t>(b.size(), INT_MAX);
  // With nothing to decrypt, wait for input before asking OpenSSL.
  bool need_input =
      io_.in.empty() && !SSL_has_pending(ssl_) && !(SSL_get_shutdown(ssl_) & SSL_RECEIVED_SHUTDOWN);
  for (;;) {
    if (broken_) {
      ec = broken_;
      co_return 0;
    }
    if (!handshake_done_) {
      ec = asio::error::not_connected;
      co_return 0;
    }
    if (need_input) {
      auto fed = feed();
      ec = co_await std::move(fed);
      if (ec) co_return 0;
    }
    std::size_t n = 0;
    tls::clear_error_queue();
    int r = SSL_read_ex(ssl_, b.data(), want, &n);
    int err = r == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl_, r);
    error_code failure;
    if (err != SSL_ERROR_NONE && err != SSL_ERROR_WANT_READ && err != SSL_ERROR_ZERO_RETURN)
      failure = failed(err);
    // Reading may write: the alert owed for a bad record (OpenSSL 3 answers a KeyUpdate with the
    // next write instead, but may not always). A flush already running takes it along; otherwise
    // send it now. The reader never waits for the writer's flush.
    if (!flushing_ && !io_.out.empty()) {
      error_code flush_ec;
      auto drained = drain(flush_ec);
      co_await std::move(drained);
    }
    if (r == 1) co_return n;
    if (failure) {
      ec = failure;
      co_return 0;
    }
    if (err == SSL_ERROR_ZERO_RETURN) {
      auto fin = await_peer_fin();
      ec = co_await std::move(fin);
      co_return 0;
    }
    need_input = true;  // SSL_ERROR_WANT_READ
  }
}

// After close_notify the peer's FIN follows at once. Waiting for it means the stream has ended
// both ways before our caller finishes it, so finish() does not reset what the peer still sends.
asio::awaitable<error_code> secure_stream::await_peer_fin() {
  if (peer_fin_) co_return asio::error::eof;
  error_code ec;
  if (io_.in.empty()) {
    std::uint8_t extra = 0;
    do {  // a read after a wait that was cut short may find nothing yet: the next one waits
      auto read = carrier_->read_some(asio::buffer(&extra, 1), ec);
      co_await std::move(read);
    } while (ec == asio::error::would_block);
  }
  if (ec == asio::error::eof) {
    peer_fin_ = true;
    co_return ec;
  }
  // Bytes after close_notify break the protocol.
  if (!ec) ec = boost::system::errc::make_error_code(boost::system::errc::protocol_error);
  if (!broken_) broken_ = ec;
  co_return ec;
}

asio::awaitable<error_code> secure_stream::feed() {
  // Waiting comes first and holds no buffer, so a quiet session can give io_.in back; then the
  // stream's bytes go straight into it, one copy.
  error_code ec;
  std::size_t n = 0;
  const std::size_t size = read_size_;
  for (;;) {
    auto ready = carrier_->wait_readable();
    co_await std::move(ready);
    feeding_ = true;
    auto* into = io_.in.prepare(size);
    auto read = carrier_->read_some(asio::buffer(into, size), ec);
    n = co_await std::move(read);
    feeding_ = false;
    if (ec != asio::error::would_block) break;
    // A stale wake-up over a socket: nothing came. Wait again, holding no empty buffer; after
    // the caller's own wait_readable, the caller waits again, holding none of its own either.
    if (io_.in.empty()) io_.in.release();
    if (std::exchange(woken_, false)) co_return ec;
  }
  woken_ = false;
  if (n == size) read_size_ = whole_record_read;  // reads that started small grow
  if (ec == asio::error::eof) ec = asio::ssl::error::stream_truncated;  // FIN, no close_notify
  if (ec) {
    if (!broken_) broken_ = ec;
    co_return ec;
  }
  io_.in.commit(n);
  co_return error_code{};
}

asio::awaitable<void> secure_stream::write_all(asio::const_buffer b, error_code& ec) {
  ec = {};
  auto* p = static_cast<const std::uint8_t*>(b.data());
  std::size_t left = b.size();
  for (;;) {
    // Encrypt only while no flush runs, so the reader's flush never carries our bytes. Asked
    // here first, as in flush(): calling the coroutine costs a frame even when it has nothing
    // to wait for.
    if (flushing_) {
      auto turn = wait_no_flush();
      co_await std::move(turn);
    }
    if (broken_) {
      ec = broken_;
      co_return;
    }
    if (!handshake_done_) {
      ec = asio::error::not_connected;
      co_return;
    }
    if (shutdown_sent_) {
      ec = asio::error::shut_down;
      co_return;
    }
    while (left > 0 && io_.out.size() < flush_threshold) {
      const std::size_t n = std::min(left, max_plaintext_record);
      ec = seal(p, n);
      if (ec) break;
      p += n;
      left -= n;
    }
    error_code flush_ec;
    if (may_drain(flush_ec)) {  // no flush runs: this loop waited for it before sealing
      auto drained = drain(flush_ec);
      co_await std::move(drained);
    }
    if (!ec) ec = flush_ec;
    if (ec || left == 0) co_return;
  }
}

asio::awaitable<void> secure_stream::shutdown_send(error_code& ec) {
  ec = {};
  if (flushing_) {
    auto turn = wait_no_flush();
    co_await std::move(turn);
  }
  if (broken_) {
    ec = broken_;
    co_return;
  }
  if (!handshake_done_) {
    ec = asio::error::not_connected;
    co_return;
  }
  if (!shutdown_sent_) {
    if (own_) {
      ec = own_->seal_alert(link::record_alert::close_notify, io_.out);
      if (ec) {
        if (!broken_) broken_ = ec;
        co_return;
      }
      // As SSL_shutdown would: OpenSSL keeps the session resumable only after a clean close.
      if (ssl_) SSL_set_shutdown(ssl_, SSL_get_shutdown(ssl_) | SSL_SENT_SHUTDOWN);
    } else {
      tls::clear_error_queue();
      int r = SSL_shutdown(ssl_);  // queues close_notify; never waits for the peer's
      if (r < 0) {
        ec = failed(SSL_get_error(ssl_, r));
        co_return;
      }
    }
    shutdown_sent_ = true;
  }
  auto flushed = flush(ec);
  co_await std::move(flushed);
  if (!ec) carrier_->shutdown_send();
}

// One record's worth of plaintext into io_.out, by OpenSSL or by our own keys.
error_code secure_stream::seal(const std::uint8_t* p, std::size_t n) {
  if (own_) {
    if (drop_session_) drop_session();
    error_code ec = own_->seal({p, n}, io_.out);
    if (ec && !broken_) broken_ = ec;
    return ec;
  }
  std::size_t written = 0;
  tls::clear_error_queue();
  int r = SSL_write_ex(ssl_, p, n, &written);
  if (r != 1) return failed(SSL_get_error(ssl_, r));
  return {};  // without partial writes, all of it
}

// Reading with own records: what an earlier read opened, then whole records straight into `b`
// (or into opened_ when `b` is smaller than the next record), then more ciphertext.
asio::awaitable<std::size_t> secure_stream::read_own(asio::mutable_buffer b, error_code& ec) {
  for (;;) {
    if (!opened_.empty()) {
      const std::size_t n = std::min(b.size(), opened_.size());
      std::memcpy(b.data(), opened_.data(), n);
      opened_.consume(n);
      co_return n;
    }
    if (broken_) {
      ec = broken_;
      co_return 0;
    }
    if (peer_closed_) {
      auto fin = await_peer_fin();
      ec = co_await std::move(fin);
      co_return 0;
    }
    if (!io_.in.empty()) {
      std::size_t produced = 0;
      const std::size_t before = io_.in.size();
      error_code failure = tickets_pending_ ? take_ticket() : error_code{};
      // What take_ticket opened goes out first: opening more into `b` would put it ahead.
      if (!failure && !tickets_pending_ && opened_.empty()) failure = open_own(b, produced);
      if (io_.in.empty()) io_.in.clear();
      if (failure) {
        if (!broken_) broken_ = failure;
        // A record we could not open: tell the peer, as TLS would, unless it gave up first.
        if (failure != link::record_error::peer_alert) {
          auto alert = send_alert_now(link::alert_for(failure));
          co_await std::move(alert);
        }
      }
      if (produced) co_return produced;  // the records before a bad one are the peer's
      if (io_.in.size() != before || !opened_.empty() || broken_ || peer_closed_) continue;
    }
    auto fed = feed();
    ec = co_await std::move(fed);
    if (ec) co_return 0;
  }
}

// Opens the whole records in io_.in; `produced` bytes of them are in `b`.
error_code secure_stream::open_own(asio::mutable_buffer b, std::size_t& produced) {
  std::size_t used = 0;
  error_code ec =
      own_->open(io_.in.bytes(), {static_cast<std::uint8_t*>(b.data()), b.size()}, used, produced);
  if (!ec && used == 0) {
    const std::size_t whole = link::record_protection::whole_record(io_.in.bytes());
    if (whole) ec = own_->open(io_.in.bytes().first(whole), opened_, used);  // b is too small
  }
  io_.in.consume(used);
  return closed_by_peer(ec);
}

// The peer's close_notify ends its sending and is no error.
error_code secure_stream::closed_by_peer(error_code ec) {
  if (ec != link::record_error::close_notify) return ec;
  peer_closed_ = true;
  if (ssl_) SSL_set_shutdown(ssl_, SSL_get_shutdown(ssl_) | SSL_RECEIVED_SHUTDOWN);
  return {};
}

// A client before the server's first own record: the record at the front is either that or one
// of OpenSSL's NewSessionTicket records, which only OpenSSL can open (and which must reach it,
// for the session cache). Our keys decide: a ticket fails their authentication.
error_code secure_stream::take_ticket() {
  const std::size_t whole = link::record_protection::whole_record(io_.in.bytes());
  std::size_t used = 0;
  if (!whole) {
    // More to come; but a bad header is an error now, before its body is waited for.
    if (io_.in.size() < proto::tls_record_header) return {};
    return own_->open(io_.in.bytes().first(proto::tls_record_header), opened_, used);
  }
  error_code ec = own_->open(io_.in.bytes().first(whole), opened_, used);
  if (ec != link::record_error::authentication_failed) {
    tickets_pending_ = false;  // the first own record, or a failure of its own
    io_.in.consume(used);
    // Nothing more comes on OpenSSL's records: the tickets that came are in the session cache,
    // which holds its own reference, so the client's SSL (with the copy of the session it
    // resumed) can go, as a server's does. OpenSSL marks the session of an SSL freed before
    // its close_notify as not resumable (and the session a ticket brought is the one in the
    // cache), so the SSL is told the session ended well: it did, and our records go on. A
    // session whose first own record failed keeps its SSL, and loses its ticket as before.
    if (!ec || ec == link::record_error::close_notify) {
      SSL_set_shutdown(ssl_, SSL_get_shutdown(ssl_) | SSL_SENT_SHUTDOWN);
      drop_session();
    }
    return closed_by_peer(ec);
  }
  // OpenSSL sees exactly that record; it may hold only handshake messages.
  io_.in_limit = whole;
  std::uint8_t none = 0;
  std::size_t n = 0;
  tls::clear_error_queue();
  int r = SSL_read_ex(ssl_, &none, 1, &n);
  int err = r == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl_, r);
  const bool took_it = io_.in_limit == 0;
  io_.in_limit = std::numeric_limits<std::size_t>::max();
  if (err == SSL_ERROR_WANT_READ && took_it) return {};
  if (err != SSL_ERROR_NONE && err != SSL_ERROR_WANT_READ) return failed(err);
  // Data on OpenSSL's records after both sides chose their own, or a record cut short.
  return boost::system::errc::make_error_code(boost::system::errc::protocol_error);
}

// Seals `alert` and sends it unless a flush already running will (as the reader does for
// OpenSSL's alerts).
asio::awaitable<void> secure_stream::send_alert_now(link::record_alert alert) {
  if (shutdown_sent_ || own_->seal_alert(alert, io_.out)) co_return;
  shutdown_sent_ = true;  // nothing more goes out after it
  if (flushing_) co_return;
  error_code ignored;
  auto drained = drain(ignored);
  co_await std::move(drained);
}

void secure_stream::abort(proto::stream_status why) {
  if (!broken_) broken_ = asio::error::operation_aborted;
  carrier_->reset(why);  // pending reads and writes end with an error
}

asio::awaitable<void> secure_stream::wait_no_flush() {
  while (flushing_) {
    if (!flushed_) {
      auto ex = co_await asio::this_coro::executor;
      flushed_.emplace(ex);
    }
    auto wait = flushed_->wait();
    co_await std::move(wait);
  }
}

asio::awaitable<void> secure_stream::flush(error_code& ec) {
  ec = {};
  if (flushing_) {
    auto turn = wait_no_flush();
    co_await std::move(turn);
  }
  if (!may_drain(ec)) co_return;
  auto drained = drain(ec);
  co_await std::move(drained);
}

bool secure_stream::may_drain(error_code& ec) const {
  ec = {};
  if (broken_ && broken_ != asio::error::eof) {
    // A failed handshake still owes the peer its alert; anything else is past sending.
    if (handshake_done_ || carrier_->is_reset()) {
      ec = broken_;
      return false;
    }
  }
  return !io_.out.empty() || !sending_.empty();
}

// The one flush path: whoever finds no flush running becomes the flusher and sends until nothing
// is left, including what others write meanwhile. One stream write is in flight at a time, and
// the bytes being sent sit in sending_, which OpenSSL never touches.
asio::awaitable<void> secure_stream::drain(error_code& ec) {
  struct flushing_guard {
    secure_stream* self;
    ~flushing_guard() {
      self->flushing_ = false;
      if (self->flushed_) self->flushed_->notify();
    }
  };
  flushing_ = true;
  flushing_guard guard{this};
  while (!sending_.empty() || !io_.out.empty()) {
    if (sending_.empty()) std::swap(sending_, io_.out);
    auto write = carrier_->write_some(asio::buffer(sending_.data(), sending_.size()), ec);
    std::size_t n = co_await std::move(write);
    if (ec) {
      if (!broken_) broken_ = ec;
      co_return;
    }
    sending_.consume(n);  // before the next await, so a cancelled flush loses no count
  }
  // Both empty, and no write holds either: the capacity goes back to io_.out, where the next
  // record is sealed. Otherwise the next swap would hand io_.out the other, empty buffer, and a
  // stream that sends a record at a time would keep two allocations instead of one.
  std::swap(sending_, io_.out);
}

}  // namespace burrow::e2ee
