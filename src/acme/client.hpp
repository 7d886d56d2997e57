// An ACME v2 client (RFC 8555) that obtains a certificate for one DNS name by TLS-ALPN-01
// (RFC 8737), for a key that never leaves the caller.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "tls/certs.hpp"

namespace burrow::acme {

struct acme_timeouts {
  // Each HTTPS exchange: resolve, connect, TLS handshake, request and response.
  std::chrono::milliseconds request{30'000};
  // The whole issuance, polling included.
  std::chrono::milliseconds total{300'000};
  // Between polls when the server sends no Retry-After, and the most a Retry-After may ask.
  std::chrono::milliseconds poll_interval{1'000};
  std::chrono::milliseconds max_poll_interval{30'000};
};

struct acme_request {
  std::string directory_url;         // https://.../directory
  std::string ca_file;               // PEM bundle that the ACME server's certificate chains to;
                                     // empty: the system store
  std::string account_key_pem;       // EC P-256 (make_account_key); an existing account is reused
  std::vector<std::string> contact;  // optional, e.g. "mailto:ops@example.com"
  std::string domain;                // the one DNS name to certify
  std::string cert_key_pem;          // the key to certify; only its CSR is sent

  // Called before the server is asked to validate: from then on, a TLS connection to `domain`
  // offering ALPN acme-tls/1 must be answered with `challenge_cert` (challenge_store::put).
  // Called on the coroutine's executor; may throw to abandon the issuance.
  std::function<void(std::string domain, tls::key_pair challenge_cert)> install_challenge;
  // Called exactly once after each successful install, when validation is over, failed, or the
  // coroutine is destroyed (challenge_store::remove). Must not throw.
  std::function<void(std::string domain)> remove_challenge;

  acme_timeouts timeouts;
};

struct acme_result {
  std::string chain_pem;    // leaf first, then the intermediates the CA sent
  std::string error;        // empty on success; says which step failed and the CA's problem
  std::string account_url;  // the account's URL (its "kid"), when known

  bool ok() const { return error.empty() && !chain_pem.empty(); }
};

// Runs the whole exchange: directory, nonce, account, order, TLS-ALPN-01 authorization,
// finalization with a CSR made from cert_key_pem, and the download. The chain returned has been
// checked to certify cert_key_pem for `domain`. Never throws for protocol or network failures;
// those are in `error`.
boost::asio::awaitable<acme_result> obtain_certificate(acme_request request);

}  // namespace burrow::acme
