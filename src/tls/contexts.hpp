// TLS 1.3 contexts for links and visitors, and per-connection peer verification: a pinned
// certificate fingerprint, or a CA chain plus host name.
#pragma once

#include "tls/certs.hpp"

#include <openssl/ssl.h>
#include <boost/asio/ssl/context.hpp>

#include <string>
#include <vector>

namespace burrow::tls {

// Both make_*_context functions honour SSLKEYLOGFILE, the debugging convention of curl and
// browsers: when it names a file, every connection's TLS secrets are appended to it as NSS key
// log lines (mode 0600, one write per line) and a warning is logged when it is first opened.
// Unset or empty, nothing is written.

// Server side: presents `identity` (leaf first, then any chain certificates in cert_pem) and
// picks the first protocol of `alpn` the client also offers; a client offering ALPN but none of
// these fails with no_application_protocol. Empty `alpn` disables ALPN selection.
boost::asio::ssl::context make_server_context(const key_pair& identity,
                                              const std::vector<std::string>& alpn);

// For visitors' browsers and clients: TLS 1.2 and 1.3 with forward-secret AEAD suites,
// presenting `identity`, ALPN http/1.1 when the client offers ALPN (a client offering only h2 is
// refused), session tickets for cheap reconnects, record buffers released while idle. Visitors'
// records after the handshake are OpenSSL's (e2ee/secure_stream.hpp).
boost::asio::ssl::context make_web_server_context(const key_pair& identity);

// What a client context trusts for chain verification: the system store, read whole when the
// context is made (Debian's bundle: about 140 certificates, 0.5 MiB of heap for as long as the
// context lives), or nothing, for a context whose peers are all verified by a pin or against a
// CA file of their own (apply_peer_verification): there chain verification without a CA file
// fails.
enum class trust { system_store, pins_and_ca_files };

// The system store only for a peer verified by neither `pin` nor `ca_file`.
trust trust_for_peer(const std::string& pin, const std::string& ca_file);

// Client side: offers `alpn`, trusts `anchors`, verifies peers by default. Use
// apply_peer_verification on each connection to choose pin or chain mode.
boost::asio::ssl::context make_client_context(const std::vector<std::string>& alpn,
                                              trust anchors = trust::system_store);

struct peer_verification {
  std::string pin;      // canonical "sha256:..." from normalize_fingerprint; empty = verify chain
  std::string ca_file;  // PEM bundle to trust instead of the system store (chain mode only)
  std::string host;     // name to check in chain mode (DNS or IP); also SNI when a DNS name
};

struct verification_outcome {
  std::string seen_fingerprint;  // the peer leaf's fingerprint (pin mode)
  bool pin_mismatch = false;
  std::string chain_error;   // X509_verify_cert_error_string of the first failure (chain mode)
  std::string expected_pin;  // set by apply_peer_verification; read by the verify callback
};

// Call on the SSL* of a stream before its handshake. `outcome` must outlive the handshake.
// Throws std::invalid_argument for a malformed pin, or chain mode without a host.
void apply_peer_verification(SSL* ssl, const peer_verification& v, verification_outcome* outcome);

// Fingerprint of the peer's leaf certificate after the handshake, "" if it sent none.
std::string peer_fingerprint(SSL* ssl);

}  // namespace burrow::tls
