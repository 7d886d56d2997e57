// Helpers for tests of end-to-end sessions: a test agent identity, both ends of one session over
// a link_pair stream, and whole-message reads and writes.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>
#include <memory>
#include <string>

#include "e2ee/contexts.hpp"
#include "e2ee/link_pair.hpp"
#include "e2ee/secure_stream.hpp"
#include "tls/certs.hpp"
#include "tls/contexts.hpp"

namespace burrow::test {

struct agent_identity {
  tls::key_pair pair;
  std::string pin;
};
const agent_identity& test_agent();  // made once per test binary

// Both ends' TLS contexts for end-to-end sessions, the server's with the test agent's key.
// Without own_records the client offers only burrow-e2ee/1, as one from before /2 did.
struct agent_contexts {
  explicit agent_contexts(bool own_records = true);
  boost::asio::ssl::context client = e2ee::make_client_context();
  boost::asio::ssl::context server = e2ee::make_server_context(test_agent().pair);
};

struct session_options {
  std::string pin;                       // empty: the test agent's
  e2ee::session_cache* cache = nullptr;  // with cache_key, prepares the client SSL
  std::string cache_key;
  bool sealed = false;  // the stream's frames go outside the link's TLS, if the pair has them
};

struct tls_session {
  stream_ends ends;
  std::unique_ptr<e2ee::secure_stream> client, server;
  std::unique_ptr<tls::verification_outcome> outcome;  // the client's pin check
  boost::system::error_code client_ec, server_ec;      // handshake results
};

// Opens a stream and runs both handshakes on it at once.
boost::asio::awaitable<tls_session> open_session(link_pair* pair, SSL_CTX* client_ctx,
                                                 SSL_CTX* server_ctx, session_options options);

// Reads until EOF or an error; `ec` is the error that ended it (eof when clean).
boost::asio::awaitable<std::string> read_to_end(e2ee::secure_stream* s,
                                                boost::system::error_code* ec);
// write_all, then shutdown_send; the first error.
boost::asio::awaitable<boost::system::error_code> send_and_close(e2ee::secure_stream* s,
                                                                 std::string data);

}  // namespace burrow::test
