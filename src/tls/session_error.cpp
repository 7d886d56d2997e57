// Mapping OpenSSL's failures on a session to error codes, for the TLS we drive ourselves.
#include "tls/session_error.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>

namespace burrow::tls {

namespace asio = boost::asio;

boost::system::error_code session_error(int ssl_error) {
  boost::system::error_code ec;
  if (ssl_error == SSL_ERROR_ZERO_RETURN) {
    ec = asio::error::eof;
  } else {
    unsigned long code = ERR_get_error();
    if (code == 0 || ERR_GET_REASON(code) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
      ec = asio::ssl::error::stream_truncated;
    else
      ec = boost::system::error_code(static_cast<int>(code), asio::error::get_ssl_category());
  }
  ERR_clear_error();
  return ec;
}

void clear_error_queue() {
  if (ERR_peek_error() != 0) ERR_clear_error();
}

}  // namespace burrow::tls
