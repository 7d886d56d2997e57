// Certificates for the embedded default: an EC P-256 CA, leaves it signs, self-signed leaves,
// and the SHA-256 fingerprints that agents and visitors pin.
#pragma once

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace burrow::tls {

struct key_pair {
  std::string cert_pem;
  std::string key_pem;  // unencrypted PKCS#8
};

template <auto Free>
struct openssl_deleter {
  template <class T>
  void operator()(T* p) const noexcept {
    Free(p);
  }
};
using x509_ptr = std::unique_ptr<X509, openssl_deleter<&X509_free>>;
using evp_pkey_ptr = std::unique_ptr<EVP_PKEY, openssl_deleter<&EVP_PKEY_free>>;
using general_names_ptr = std::unique_ptr<GENERAL_NAMES, openssl_deleter<&GENERAL_NAMES_free>>;

// A subjectAltName value holding exactly one dNSName; throws std::runtime_error.
general_names_ptr dns_general_names(std::string_view dns_name);

// Throws std::runtime_error "what: <first OpenSSL error>" and clears the error queue.
[[noreturn]] void throw_openssl_error(std::string_view what);

// Self-signed CA: basicConstraints critical CA:TRUE, keyUsage keyCertSign+cRLSign.
key_pair make_ca(std::string_view common_name, std::chrono::hours validity);

// Leaf signed by `ca` with SANs for dns_names and ip_addresses (v4 and v6), usable as TLS
// server and client.
key_pair make_leaf(const key_pair& ca, std::string_view common_name,
                   const std::vector<std::string>& dns_names,
                   const std::vector<std::string>& ip_addresses, std::chrono::hours validity);

// A PKCS#10 request (PEM) for `common_name`, signed with the private key in `key_pem`.
std::string make_csr(std::string_view key_pem, std::string_view common_name);

inline constexpr std::size_t max_csr_size = 8 * 1024;

// Issues a leaf for the public key of `csr_pem`, for exactly `dns_name`: the request's own
// subject and extensions are ignored, only its key (EC P-256 or RSA >= 2048) is taken, after its
// signature verifies. Throws std::runtime_error on a bad request. The key never reaches the CA.
std::string sign_csr(const key_pair& ca, std::string_view csr_pem, std::string_view dns_name,
                     std::chrono::seconds validity);

key_pair make_self_signed(std::string_view common_name, const std::vector<std::string>& dns_names,
                          std::chrono::hours validity);

// "sha256:" + 64 lowercase hex digits of SHA-256 over the certificate's DER.
std::string fingerprint_sha256(std::string_view cert_pem);
std::string fingerprint_sha256(X509* cert);

// Accepts "sha256:HEX", "SHA256:HEX" or plain HEX, any case, with or without ':' between byte
// pairs; returns "sha256:<lowercase hex>", or nullopt unless it is exactly 32 bytes of hex.
std::optional<std::string> normalize_fingerprint(std::string_view text);

std::chrono::system_clock::time_point not_after(std::string_view cert_pem);
std::chrono::system_clock::time_point not_before(std::string_view cert_pem);

// DNS names and IP addresses (as text, e.g. "127.0.0.1", "::1") from subjectAltName.
std::vector<std::string> subject_alt_names(std::string_view cert_pem);

// The first certificate in `pem`; throws std::runtime_error when there is none.
x509_ptr parse_certificate(std::string_view pem);
evp_pkey_ptr parse_private_key(std::string_view pem);

// True when `cert_pem`'s signature verifies with the public key of `issuer_cert_pem`.
bool signed_by(std::string_view cert_pem, std::string_view issuer_cert_pem);

// True when the private key belongs to the certificate.
bool key_matches(const key_pair& pair);

}  // namespace burrow::tls
