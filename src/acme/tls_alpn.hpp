// The TLS-ALPN-01 challenge (RFC 8737): its self-signed certificate, and a server context hook
// that presents it to a validator offering ALPN "acme-tls/1" for a name being validated.
#pragma once

#include <openssl/ssl.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tls/certs.hpp"

namespace burrow::acme {

inline constexpr std::string_view acme_tls_1 = "acme-tls/1";

// Self-signed, with a new EC P-256 key, subjectAltName dNSName `domain` only, and the critical
// acmeIdentifier extension (1.3.6.1.5.5.7.1.31) holding SHA-256(key_authorization).
tls::key_pair make_challenge_certificate(std::string_view domain,
                                         std::string_view key_authorization);

// Challenge certificates by domain (case-insensitive), shared by OpenSSL's handshake callbacks
// on any thread and the ACME client that installs and removes them.
class challenge_store {
 public:
  struct identity {
    tls::x509_ptr cert;
    tls::evp_pkey_ptr key;
  };

  // Throws std::runtime_error if the pair does not parse or does not match; replaces any
  // certificate already held for `domain`.
  void put(std::string_view domain, const tls::key_pair& challenge);
  void remove(std::string_view domain);
  std::shared_ptr<const identity> find(std::string_view domain) const;
  std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const identity>, std::less<>> by_domain_;
};

// Makes a server context answer TLS-ALPN-01: a ClientHello offering "acme-tls/1" with an SNI
// name that `store` holds gets that challenge certificate and ALPN "acme-tls/1". Every other
// ClientHello is handled as before, with ALPN chosen from `fallback_alpn` in server order (the
// list make_web_server_context uses; a client offering ALPN but none of them is refused with
// no_application_protocol). This replaces the context's ALPN select and client hello callbacks;
// the context keeps `store` alive. Call before the context serves connections.
void enable_tls_alpn_01(SSL_CTX* ctx, std::shared_ptr<challenge_store> store,
                        const std::vector<std::string>& fallback_alpn = {"http/1.1"});

// True after a handshake that answered a TLS-ALPN-01 validation: the server should close the
// connection (RFC 8737 section 3: no application data follows) instead of serving it.
bool answered_acme_challenge(const SSL* ssl);

}  // namespace burrow::acme
