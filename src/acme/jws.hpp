// JSON Web Signatures for ACME (RFC 8555 section 6.2, RFC 7515/7517/7638): base64url, the JWK
// and thumbprint of an EC P-256 account key, and flattened JWS objects signed with ES256.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tls/certs.hpp"

namespace burrow::acme {

// Base64url without padding (RFC 7515 section 2).
std::string base64url(std::span<const std::uint8_t> bytes);
std::string base64url(std::string_view bytes);
// Strict: the unpadded alphabet only; nullopt on any other character or an impossible length.
std::optional<std::string> base64url_decode(std::string_view text);

// A new EC P-256 account key as unencrypted PKCS#8 PEM, for the caller to keep (mode 0600).
std::string make_account_key();

// An EC P-256 account key, parsed once. Throws std::runtime_error unless `key_pem` is an
// unencrypted P-256 private key.
class account_key {
 public:
  explicit account_key(std::string_view key_pem);

  // {"crv":"P-256","kty":"EC","x":"...","y":"..."}: members in lexicographic order and without
  // whitespace, so it is also the RFC 7638 thumbprint input.
  const std::string& jwk() const { return jwk_; }
  // base64url(SHA-256(jwk())), 43 characters.
  const std::string& thumbprint() const { return thumbprint_; }
  // ES256 over `data`: the raw 64-byte r||s form of RFC 7518 section 3.4, not DER.
  std::string sign(std::string_view data) const;
  EVP_PKEY* native() const { return key_.get(); }

 private:
  tls::evp_pkey_ptr key_;
  std::string jwk_;
  std::string thumbprint_;
};

// The ACME key authorization for a challenge token: token "." thumbprint.
std::string key_authorization(std::string_view token, const account_key& key);

// A flattened JWS JSON object, {"protected":..,"payload":..,"signature":..}, whose protected
// header is {"alg":"ES256","nonce":..,"url":..} plus "kid" when `kid` is set, else the "jwk".
// An empty `payload` is POST-as-GET (RFC 8555 section 6.3): its payload member is "".
std::string sign_jws(const account_key& key, std::string_view payload, std::string_view nonce,
                     std::string_view url, std::string_view kid);

}  // namespace burrow::acme
