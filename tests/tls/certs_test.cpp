// Certificate issuance, chain verification, SANs and fingerprint handling.
#include "tls/certs.hpp"

#include "core/secret.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <stdexcept>

namespace burrow::tls {
namespace {

using namespace std::chrono_literals;
using store_ptr = std::unique_ptr<X509_STORE, openssl_deleter<&X509_STORE_free>>;
using store_ctx_ptr = std::unique_ptr<X509_STORE_CTX, openssl_deleter<&X509_STORE_CTX_free>>;

bool contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// X509_verify_cert of `leaf_pem` against a store holding only `ca_pem`.
bool chain_verifies(const std::string& leaf_pem, const std::string& ca_pem) {
  auto ca = parse_certificate(ca_pem);
  auto leaf = parse_certificate(leaf_pem);
  store_ptr store(X509_STORE_new());
  store_ctx_ptr ctx(X509_STORE_CTX_new());
  if (!store || !ctx || X509_STORE_add_cert(store.get(), ca.get()) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), leaf.get(), nullptr) != 1)
    return false;
  X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_SERVER);
  return X509_verify_cert(ctx.get()) == 1;
}

TEST(TlsCerts, CaHasCaExtensions) {
  auto ca = make_ca("burrow test CA", 24h);
  auto cert = parse_certificate(ca.cert_pem);
  EXPECT_EQ(X509_check_ca(cert.get()), 1);
  EXPECT_TRUE(X509_get_key_usage(cert.get()) & KU_KEY_CERT_SIGN);
  EXPECT_TRUE(X509_get_key_usage(cert.get()) & KU_CRL_SIGN);
  EXPECT_NE(X509_get0_subject_key_id(cert.get()), nullptr);
  EXPECT_EQ(EVP_PKEY_get_bits(X509_get0_pubkey(cert.get())), 256);
  EXPECT_EQ(X509_get_version(cert.get()), X509_VERSION_3);
  EXPECT_TRUE(key_matches(ca));
  EXPECT_TRUE(signed_by(ca.cert_pem, ca.cert_pem));
  // Serial: random, positive, at most 128 bits.
  const ASN1_INTEGER* serial = X509_get0_serialNumber(cert.get());
  EXPECT_LE(ASN1_STRING_length(serial), 16);
  EXPECT_NE(make_ca("burrow test CA", 24h).cert_pem, ca.cert_pem);
  // notBefore is backdated by an hour.
  int days = 0, secs = 0;
  ASSERT_EQ(ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(cert.get()), nullptr), 1);
  EXPECT_GE(days * 86400 + secs, 3500);
}

TEST(TlsCerts, LeafChainVerifiesAgainstItsCa) {
  auto ca = make_ca("burrow test CA", 24h);
  auto leaf =
      make_leaf(ca, "relay", {"relay.example.test", "localhost"}, {"127.0.0.1", "::1"}, 24h);
  EXPECT_TRUE(chain_verifies(leaf.cert_pem, ca.cert_pem));
  EXPECT_TRUE(signed_by(leaf.cert_pem, ca.cert_pem));
  EXPECT_TRUE(key_matches(leaf));

  auto other_ca = make_ca("other CA", 24h);
  EXPECT_FALSE(chain_verifies(leaf.cert_pem, other_ca.cert_pem));
  EXPECT_FALSE(signed_by(leaf.cert_pem, other_ca.cert_pem));
  EXPECT_FALSE(key_matches({leaf.cert_pem, ca.key_pem}));
}

TEST(TlsCerts, LeafHasSansAndUsages) {
  auto ca = make_ca("burrow test CA", 24h);
  auto leaf = make_leaf(ca, "relay", {"relay.example.test", "localhost"},
                        {"127.0.0.1", "192.0.2.7", "::1", "2001:db8::42"}, 24h);
  auto sans = subject_alt_names(leaf.cert_pem);
  EXPECT_EQ(sans.size(), 6u);
  for (auto name :
       {"relay.example.test", "localhost", "127.0.0.1", "192.0.2.7", "::1", "2001:db8::42"})
    EXPECT_TRUE(contains(sans, name)) << name;

  auto cert = parse_certificate(leaf.cert_pem);
  EXPECT_EQ(X509_check_ca(cert.get()), 0);
  EXPECT_TRUE(X509_get_extended_key_usage(cert.get()) & XKU_SSL_SERVER);
  EXPECT_TRUE(X509_get_extended_key_usage(cert.get()) & XKU_SSL_CLIENT);
  EXPECT_NE(X509_get0_authority_key_id(cert.get()), nullptr);
  EXPECT_EQ(X509_check_host(cert.get(), "relay.example.test", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "2001:db8::42", 0), 1);
}

TEST(TlsCerts, LeafRejectsBadNames) {
  auto ca = make_ca("burrow test CA", 24h);
  EXPECT_THROW(make_leaf(ca, "relay", {}, {"not-an-ip"}, 24h), std::invalid_argument);
  EXPECT_THROW(make_leaf(ca, "relay", {""}, {}, 24h), std::invalid_argument);
  EXPECT_THROW(make_leaf(ca, "relay", {"bad name"}, {}, 24h), std::invalid_argument);
  EXPECT_THROW(make_leaf({ca.cert_pem, make_ca("x", 24h).key_pem}, "relay", {"a"}, {}, 24h),
               std::runtime_error);
}

TEST(TlsCerts, SelfSignedLeaf) {
  auto pair = make_self_signed("burrow agent", {"svc.example.test"}, 24h);
  auto cert = parse_certificate(pair.cert_pem);
  EXPECT_EQ(X509_check_ca(cert.get()), 0);
  EXPECT_TRUE(X509_get_extended_key_usage(cert.get()) & XKU_SSL_SERVER);
  EXPECT_TRUE(X509_get_extended_key_usage(cert.get()) & XKU_SSL_CLIENT);
  EXPECT_EQ(X509_self_signed(cert.get(), 1), 1);
  // Its key usage forbids signing certificates, so it is not an issuer, not even of itself.
  EXPECT_FALSE(signed_by(pair.cert_pem, pair.cert_pem));
  EXPECT_TRUE(key_matches(pair));
  EXPECT_EQ(subject_alt_names(pair.cert_pem), std::vector<std::string>{"svc.example.test"});
}

TEST(TlsCerts, NotAfterMatchesValidity) {
  auto pair = make_self_signed("x", {"x.test"}, 48h);
  auto expected = std::chrono::system_clock::now() + 48h;
  auto diff = not_after(pair.cert_pem) - expected;
  EXPECT_LT(std::chrono::abs(diff), 2min);
}

TEST(TlsCerts, ParseErrorsCarryOpenSslText) {
  try {
    parse_certificate("not a certificate");
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot parse PEM certificate: error:"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_private_key(""), std::runtime_error);
}

TEST(TlsFingerprint, IsSha256OverDer) {
  auto pair = make_self_signed("x", {"x.test"}, 24h);
  auto cert = parse_certificate(pair.cert_pem);
  unsigned char* der = nullptr;
  int len = i2d_X509(cert.get(), &der);
  ASSERT_GT(len, 0);
  auto expected = "sha256:" + hex(sha256(std::string_view(reinterpret_cast<char*>(der), len)));
  OPENSSL_free(der);

  auto fp = fingerprint_sha256(pair.cert_pem);
  EXPECT_EQ(fp, expected);
  EXPECT_EQ(fingerprint_sha256(cert.get()), fp);
  ASSERT_EQ(fp.size(), 7u + 64u);
  EXPECT_EQ(normalize_fingerprint(fp), fp);
}

TEST(TlsFingerprint, NormalizeAcceptsCommonForms) {
  const std::string hex64 = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
  const std::string canonical = "sha256:" + hex64;
  std::string upper = hex64;
  std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
  std::string colons;
  for (std::size_t i = 0; i < upper.size(); i += 2) {
    if (i) colons += ':';
    colons += upper.substr(i, 2);
  }
  for (const auto& form : {canonical, "SHA256:" + upper, hex64, upper, colons, "sha256:" + colons,
                           "Sha256:" + hex64, "  " + canonical + "\n"})
    EXPECT_EQ(normalize_fingerprint(form), canonical) << form;
}

TEST(TlsFingerprint, NormalizeRejectsMalformed) {
  const std::string hex64 = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
  const std::vector<std::string> bad = {
      "",
      "sha256:",
      hex64.substr(2),           // 31 bytes
      hex64 + "00",              // 33 bytes
      hex64.substr(1),           // odd digit count
      "g" + hex64.substr(1),     // not hex
      "sha1:" + hex64,           // other algorithm
      "sha256:sha256:" + hex64,  // doubled prefix
      ":" + hex64,               // leading separator
      hex64 + ":",               // trailing separator
      hex64.substr(0, 2) + "::" + hex64.substr(2),
      hex64.substr(0, 1) + ":" + hex64.substr(1),  // separator inside a byte
      hex64.substr(0, 32) + " " + hex64.substr(32),
  };
  for (const auto& text : bad) EXPECT_EQ(normalize_fingerprint(text), std::nullopt) << text;
}

TEST(TlsCsr, SignedForTheRequestersKeyAndOnlyTheGivenName) {
  auto ca = make_ca("test CA", 24h);
  auto agent = make_self_signed("agent", {"agent"}, 24h);
  auto csr = make_csr(agent.key_pem, "web");
  EXPECT_NE(csr.find("BEGIN CERTIFICATE REQUEST"), std::string::npos);
  auto cert = sign_csr(ca, csr, "web.burrow.localhost", 30s);
  EXPECT_TRUE(key_matches({cert, agent.key_pem}));  // the agent's key, never sent
  EXPECT_TRUE(signed_by(cert, ca.cert_pem));
  EXPECT_TRUE(chain_verifies(cert, ca.cert_pem));
  EXPECT_EQ(subject_alt_names(cert), std::vector<std::string>{"web.burrow.localhost"});
  auto left = not_after(cert) - std::chrono::system_clock::now();
  EXPECT_GT(left, 20s);
  EXPECT_LT(left, 40s);
}

TEST(TlsCsr, BadRequestsAreRefused) {
  auto ca = make_ca("test CA", 24h);
  auto agent = make_self_signed("agent", {"agent"}, 24h);
  EXPECT_THROW(sign_csr(ca, "not a request", "a.example", 1h), std::runtime_error);
  EXPECT_THROW(sign_csr(ca, std::string(max_csr_size + 1, 'A'), "a.example", 1h),
               std::runtime_error);
  // A request whose signature does not match its key: one byte of the signature flipped.
  auto csr = make_csr(agent.key_pem, "web");
  auto begin = csr.find('\n') + 1;
  auto body_end = csr.rfind("-----END");
  std::string body = csr.substr(begin, body_end - begin);
  std::string der;
  {
    std::string clean;
    for (char c : body)
      if (c != '\n') clean += c;
    der.resize(clean.size());
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(der.data()),
                            reinterpret_cast<const unsigned char*>(clean.data()),
                            static_cast<int>(clean.size()));
    ASSERT_GT(n, 10);
    der.resize(static_cast<std::size_t>(n));
    while (!clean.empty() && clean.back() == '=') {
      clean.pop_back();
      der.pop_back();
    }
  }
  der[der.size() - 5] ^= 0x01;  // inside the ECDSA signature at the end
  std::string encoded(4 * ((der.size() + 2) / 3) + 1, '\0');
  int m = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                          reinterpret_cast<const unsigned char*>(der.data()),
                          static_cast<int>(der.size()));
  encoded.resize(static_cast<std::size_t>(m));
  std::string forged = "-----BEGIN CERTIFICATE REQUEST-----\n";
  for (std::size_t i = 0; i < encoded.size(); i += 64) forged += encoded.substr(i, 64) + "\n";
  forged += "-----END CERTIFICATE REQUEST-----\n";
  EXPECT_THROW(sign_csr(ca, forged, "a.example", 1h), std::runtime_error);
  EXPECT_NO_THROW(sign_csr(ca, csr, "a.example", 1h));
}

}  // namespace
}  // namespace burrow::tls
