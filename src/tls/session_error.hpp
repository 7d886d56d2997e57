// What a failed OpenSSL call on a TLS session means, as an error code: the peer's close_notify,
// a connection cut without one, or OpenSSL's own reason.
#pragma once

#include <boost/system/error_code.hpp>

namespace burrow::tls {

// Call right after the failed SSL_read, SSL_write or SSL_do_handshake, with what SSL_get_error
// said and before anything else touches this thread's OpenSSL error queue (which it clears):
// asio::error::eof for SSL_ERROR_ZERO_RETURN, asio::ssl::error::stream_truncated for an end
// without close_notify, else the queued OpenSSL error in asio's SSL category.
boost::system::error_code session_error(int ssl_error);

// Empties this thread's OpenSSL error queue before SSL_read, SSL_write or SSL_do_handshake, as
// SSL_get_error needs. Looks first: on a healthy session the queue is already empty, and
// ERR_clear_error itself walks every slot of it (about 800 instructions, per record).
void clear_error_queue();

}  // namespace burrow::tls
