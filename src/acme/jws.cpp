// ES256 signing with OpenSSL 3; JSON through Boost.JSON so server-chosen nonces and URLs are
// escaped, except the JWK, whose exact bytes the thumbprint depends on.
#include "acme/jws.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include <array>
#include <boost/json.hpp>
#include <climits>
#include <stdexcept>

#include "core/secret.hpp"

namespace burrow::acme {
namespace {

using bio_ptr = std::unique_ptr<BIO, tls::openssl_deleter<&BIO_free_all>>;
using bn_ptr = std::unique_ptr<BIGNUM, tls::openssl_deleter<&BN_free>>;
using md_ctx_ptr = std::unique_ptr<EVP_MD_CTX, tls::openssl_deleter<&EVP_MD_CTX_free>>;
using ecdsa_sig_ptr = std::unique_ptr<ECDSA_SIG, tls::openssl_deleter<&ECDSA_SIG_free>>;

constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr std::size_t coordinate_size = 32;  // P-256

int decode_char(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

std::string fixed_width(const BIGNUM* bn) {
  std::string out(coordinate_size, '\0');
  if (BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(out.data()), coordinate_size) !=
      static_cast<int>(coordinate_size))
    tls::throw_openssl_error("EC value does not fit 32 bytes");
  return out;
}

std::string coordinate(EVP_PKEY* key, const char* name) {
  BIGNUM* raw = nullptr;
  if (EVP_PKEY_get_bn_param(key, name, &raw) != 1) tls::throw_openssl_error("cannot read EC key");
  bn_ptr bn(raw);
  return fixed_width(bn.get());
}

}  // namespace

std::string base64url(std::span<const std::uint8_t> bytes) {
  std::string out;
  out.reserve((bytes.size() * 4 + 2) / 3);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    std::uint32_t v = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    out += alphabet[v & 63];
  }
  if (std::size_t rest = bytes.size() - i; rest > 0) {
    std::uint32_t v = bytes[i] << 16;
    if (rest == 2) v |= bytes[i + 1] << 8;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    if (rest == 2) out += alphabet[(v >> 6) & 63];
  }
  return out;
}

std::string base64url(std::string_view bytes) {
  return base64url(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
}

std::optional<std::string> base64url_decode(std::string_view text) {
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = decode_char(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  // Leftover bits must be zero, so each byte string has exactly one encoding.
  if ((acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

std::string make_account_key() {
  tls::evp_pkey_ptr key(EVP_EC_gen("P-256"));
  if (!key) tls::throw_openssl_error("EC P-256 key generation failed");
  bio_ptr out(BIO_new(BIO_s_mem()));
  if (!out ||
      !PEM_write_bio_PrivateKey(out.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr))
    tls::throw_openssl_error("cannot write PEM");
  char* data = nullptr;
  long len = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<std::size_t>(len));
}

account_key::account_key(std::string_view key_pem) : key_(tls::parse_private_key(key_pem)) {
  char group[32] = {};
  if (!EVP_PKEY_is_a(key_.get(), "EC") ||
      EVP_PKEY_get_utf8_string_param(key_.get(), OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group,
                                     nullptr) != 1 ||
      std::string_view(group) != "prime256v1") {
    ERR_clear_error();
    throw std::runtime_error("the ACME account key must be an EC P-256 key");
  }
  jwk_ = R"({"crv":"P-256","kty":"EC","x":")" +
         base64url(coordinate(key_.get(), OSSL_PKEY_PARAM_EC_PUB_X)) + R"(","y":")" +
         base64url(coordinate(key_.get(), OSSL_PKEY_PARAM_EC_PUB_Y)) + R"("})";
  auto digest = sha256(jwk_);
  thumbprint_ = base64url(digest);
}

std::string account_key::sign(std::string_view data) const {
  md_ctx_ptr md(EVP_MD_CTX_new());
  std::size_t der_len = 0;
  if (!md || EVP_DigestSignInit(md.get(), nullptr, EVP_sha256(), nullptr, key_.get()) != 1 ||
      EVP_DigestSign(md.get(), nullptr, &der_len,
                     reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1)
    tls::throw_openssl_error("ES256 signing failed");
  std::string der(der_len, '\0');
  if (EVP_DigestSign(md.get(), reinterpret_cast<unsigned char*>(der.data()), &der_len,
                     reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1)
    tls::throw_openssl_error("ES256 signing failed");
  // OpenSSL signs in DER (SEQUENCE of two INTEGERs); JWS wants the two values side by side.
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  ecdsa_sig_ptr sig(d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der_len)));
  if (!sig) tls::throw_openssl_error("cannot decode ECDSA signature");
  return fixed_width(ECDSA_SIG_get0_r(sig.get())) + fixed_width(ECDSA_SIG_get0_s(sig.get()));
}

std::string key_authorization(std::string_view token, const account_key& key) {
  return std::string(token) + "." + key.thumbprint();
}

std::string sign_jws(const account_key& key, std::string_view payload, std::string_view nonce,
                     std::string_view url, std::string_view kid) {
  boost::json::object header;
  header["alg"] = "ES256";
  if (kid.empty())
    header["jwk"] = boost::json::parse(key.jwk());
  else
    header["kid"] = kid;
  header["nonce"] = nonce;
  header["url"] = url;
  std::string protected_b64 = base64url(boost::json::serialize(header));
  std::string payload_b64 = payload.empty() ? std::string() : base64url(payload);
  std::string signature = base64url(key.sign(protected_b64 + "." + payload_b64));
  boost::json::object jws;
  jws["protected"] = protected_b64;
  jws["payload"] = payload_b64;
  jws["signature"] = signature;
  return boost::json::serialize(jws);
}

}  // namespace burrow::acme
