// TLS contexts for the end-to-end session between `burrow connect` (client) and the agent
// (server), and the client's cache of sessions to resume, one per service and pin.
#pragma once

#include "tls/certs.hpp"

#include <openssl/ssl.h>
#include <boost/asio/ssl/context.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace burrow::e2ee {

// Both sides must agree on one of these: the agent refuses a client that offers no ALPN at all.
// With /1 every record is OpenSSL's; with /2 the records after the handshake are the session's
// own, keyed from its exporter (docs/protocol.md, section 6a). Each side prefers /2; a peer that
// knows only /1 gets /1.
inline constexpr std::string_view alpn_protocol = "burrow-e2ee/1";
inline constexpr std::string_view alpn_own_records = "burrow-e2ee/2";
// The exporter label of the end-to-end session's own records.
inline constexpr std::string_view own_records_label = "EXPORTER-burrow-e2ee-records";

// TLS 1.3 only, presenting `identity`; requires ALPN burrow-e2ee/2 or /1, or the session ALPN
// (session_keys.hpp) on a session stream; one stateless session ticket per handshake; record
// buffers released while idle.
boost::asio::ssl::context make_server_context(const tls::key_pair& identity);

// TLS 1.3 only, offering ALPN burrow-e2ee/2 and /1, or with `session` only the session ALPN (for
// a session stream); record buffers released while idle. Peers are verified by their pin, which
// callers set per connection with tls::apply_peer_verification; the system store is not loaded.
// Sessions reach a session_cache only through its prepare().
boost::asio::ssl::context make_client_context(bool session = false);

// Sessions to resume, the newest per key. Thread-safe: connections on several threads share one.
// A resumed handshake has no certificate, so the pin is not checked again: the key must include
// the pin (and whatever else must match, such as the service name) so that a session made under
// one pin is never offered under another.
class session_cache {
 public:
  explicit session_cache(bool enabled = true, std::size_t max_entries = 256);
  session_cache(const session_cache&) = delete;
  session_cache& operator=(const session_cache&) = delete;

  // Before the handshake of a client SSL made from make_client_context(): offers the session
  // cached under `key`, if any, and stores the tickets that arrive later on this connection under
  // `key`. Does nothing when disabled. The SSL may outlive the cache.
  void prepare(SSL* ssl, const std::string& key);

  bool enabled() const { return enabled_; }
  std::size_t size() const;
  // Tickets taken into the cache since it was made (a new one replaces the old under its key).
  std::uint64_t tickets_stored() const;
  void clear();

  struct state;  // shared with the SSLs that store tickets into it

 private:
  bool enabled_;
  std::shared_ptr<state> state_;
};

}  // namespace burrow::e2ee
