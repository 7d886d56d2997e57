// Taking a link's TLS session over from asio::ssl::stream, and the record work on its buffers.
#include "link/link_tls.hpp"

#include <openssl/err.h>

#include <algorithm>
#include <climits>
#include <limits>
#include <stdexcept>

#include "tls/certs.hpp"
#include "tls/session_error.hpp"

namespace burrow::link {

using boost::system::error_code;

namespace {
constexpr std::size_t max_record_plaintext = 16 * 1024;
}

link_tls::link_tls(SSL* ssl, bool own_records, bool dialer) : ssl_(ssl) {
  if (!ssl_) throw std::invalid_argument("link_tls: no TLS session");
  BIO* old = SSL_get_rbio(ssl_);
  if (old && BIO_ctrl_wpending(old) != 0)
    throw std::runtime_error("the TLS session still has records to send");
  // Ciphertext asio already handed to the session's BIO but OpenSSL has not read yet.
  while (old && BIO_ctrl_pending(old) > 0) {
    std::size_t n = BIO_ctrl_pending(old);
    int got = BIO_read(old, io_.in.prepare(n), static_cast<int>(std::min<std::size_t>(n, INT_MAX)));
    if (got <= 0) break;
    io_.in.commit(static_cast<std::size_t>(got));
  }
  BIO* ours = tls::new_buffer_bio(&io_);
  if (!ours) tls::throw_openssl_error("cannot make the link's TLS buffers");
  SSL_set_bio(ssl_, ours, ours);  // frees asio's half of its BIO pair; the SSL takes ours
  // One SSL_write then encrypts the whole batch instead of stopping after each record.
  SSL_clear_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE);
  if (own_records) own_ = record_protection::from_session(ssl_, dialer);
}

link_tls::~link_tls() = default;

error_code link_tls::encrypt(std::span<const std::uint8_t> plain) {
  if (own_) return own_->seal(plain, io_.out);
  while (!plain.empty()) {
    int len = static_cast<int>(std::min<std::size_t>(plain.size(), INT_MAX / 2));
    tls::clear_error_queue();
    int r = SSL_write(ssl_, plain.data(), len);
    if (r <= 0) return tls::session_error(SSL_get_error(ssl_, r));
    plain = plain.subspan(static_cast<std::size_t>(r));
  }
  return {};
}

error_code link_tls::decrypt(byte_buffer& plain, std::size_t records) {
  if (own_) {
    if (records > io_.in.size())
      return boost::system::errc::make_error_code(boost::system::errc::protocol_error);
    return open_own(plain, records, true);
  }
  io_.in_limit = records;
  error_code ec = decrypt(plain);
  const bool left_over = io_.in_limit != 0;
  io_.in_limit = std::numeric_limits<std::size_t>::max();
  // OpenSSL takes a record's header, then its body: whole records are taken whole.
  if (!ec && left_over)
    ec = boost::system::errc::make_error_code(boost::system::errc::protocol_error);
  return ec;
}

error_code link_tls::decrypt(byte_buffer& plain) {
  if (own_) return open_own(plain, io_.in.size(), false);
  for (;;) {
    tls::clear_error_queue();
    int r = SSL_read(ssl_, plain.prepare(max_record_plaintext), max_record_plaintext);
    if (r > 0) {
      plain.commit(static_cast<std::size_t>(r));
      continue;
    }
    int err = SSL_get_error(ssl_, r);
    if (err == SSL_ERROR_WANT_READ) {
      if (io_.in.empty()) io_.in.clear();
      return {};
    }
    return tls::session_error(err);
  }
}

error_code link_tls::open_own(byte_buffer& plain, std::size_t limit, bool whole) {
  std::size_t used = 0;
  error_code ec = own_->open(io_.in.bytes().first(limit), plain, used);
  io_.in.consume(used);
  if (!ec && whole && used != limit)  // a run of whole records is taken whole, as above
    ec = boost::system::errc::make_error_code(boost::system::errc::protocol_error);
  if (io_.in.empty()) io_.in.clear();
  return ec;
}

}  // namespace burrow::link
