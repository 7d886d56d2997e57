// session_error: the three outcomes of a failed call on a TLS session, and the cleared queue.
#include "tls/session_error.hpp"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>

namespace burrow::tls {
namespace {

namespace asio = boost::asio;

TEST(SessionError, ClosedWithCloseNotifyIsEndOfFile) {
  EXPECT_EQ(session_error(SSL_ERROR_ZERO_RETURN), asio::error::eof);
}

TEST(SessionError, EndWithoutCloseNotifyIsTruncation) {
  ERR_clear_error();
  EXPECT_EQ(session_error(SSL_ERROR_SYSCALL), asio::ssl::error::stream_truncated);
  ERR_raise(ERR_LIB_SSL, SSL_R_UNEXPECTED_EOF_WHILE_READING);
  EXPECT_EQ(session_error(SSL_ERROR_SSL), asio::ssl::error::stream_truncated);
}

TEST(SessionError, OpenSslsReasonIsKeptAndTheQueueCleared) {
  ERR_raise(ERR_LIB_SSL, SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC);
  ERR_raise(ERR_LIB_SSL, SSL_R_BAD_LENGTH);
  auto ec = session_error(SSL_ERROR_SSL);
  EXPECT_EQ(&ec.category(), &asio::error::get_ssl_category());
  EXPECT_EQ(ERR_GET_REASON(static_cast<unsigned long>(ec.value())),
            SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC);
  EXPECT_EQ(ERR_peek_error(), 0u);
}

}  // namespace
}  // namespace burrow::tls
