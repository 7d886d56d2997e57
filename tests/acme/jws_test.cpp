// base64url, the account key's JWK and thumbprint, and ES256 JWS checked with OpenSSL against
// the JWK alone.
#include "acme/jws.hpp"

#include <gtest/gtest.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>

#include <boost/json.hpp>

#include "core/secret.hpp"

namespace burrow::acme {
namespace {

namespace json = boost::json;

std::string decoded(std::string_view b64) {
  auto d = base64url_decode(b64);
  EXPECT_TRUE(d.has_value()) << b64;
  return d.value_or("");
}

// The public key that the JWK describes, built from its coordinates only.
tls::evp_pkey_ptr key_from_jwk(const json::object& jwk) {
  std::string point = "\x04" + decoded(jwk.at("x").as_string()) + decoded(jwk.at("y").as_string());
  EXPECT_EQ(point.size(), 65u);
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0);
  OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size());
  OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr);
  EVP_PKEY* key = nullptr;
  EXPECT_EQ(EVP_PKEY_fromdata_init(ctx), 1);
  EXPECT_EQ(EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params), 1);
  EVP_PKEY_CTX_free(ctx);
  OSSL_PARAM_free(params);
  OSSL_PARAM_BLD_free(bld);
  return tls::evp_pkey_ptr(key);
}

// Verifies a raw r||s ES256 signature the way a JWS verifier would.
bool verifies(EVP_PKEY* key, std::string_view data, std::string_view raw_sig) {
  if (raw_sig.size() != 64) return false;
  ECDSA_SIG* sig = ECDSA_SIG_new();
  auto* bytes = reinterpret_cast<const unsigned char*>(raw_sig.data());
  ECDSA_SIG_set0(sig, BN_bin2bn(bytes, 32, nullptr), BN_bin2bn(bytes + 32, 32, nullptr));
  unsigned char* der = nullptr;
  int der_len = i2d_ECDSA_SIG(sig, &der);
  ECDSA_SIG_free(sig);
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  bool ok = EVP_DigestVerifyInit(md, nullptr, EVP_sha256(), nullptr, key) == 1 &&
            EVP_DigestVerify(md, der, static_cast<std::size_t>(der_len),
                             reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
  EVP_MD_CTX_free(md);
  OPENSSL_free(der);
  return ok;
}

TEST(AcmeJws, Base64urlMatchesRfc4648Vectors) {
  EXPECT_EQ(base64url(std::string_view("")), "");
  EXPECT_EQ(base64url(std::string_view("f")), "Zg");
  EXPECT_EQ(base64url(std::string_view("fo")), "Zm8");
  EXPECT_EQ(base64url(std::string_view("foo")), "Zm9v");
  EXPECT_EQ(base64url(std::string_view("foob")), "Zm9vYg");
  EXPECT_EQ(base64url(std::string_view("fooba")), "Zm9vYmE");
  EXPECT_EQ(base64url(std::string_view("foobar")), "Zm9vYmFy");
  EXPECT_EQ(base64url(std::string_view("\xfb\xff\xbf", 3)), "-_-_");
}

TEST(AcmeJws, Base64urlDecodeRoundTripsAndIsStrict) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (std::size_t n = 0; n < 10; ++n)
    EXPECT_EQ(base64url_decode(base64url(std::string_view(all).substr(0, n))), all.substr(0, n));
  EXPECT_EQ(base64url_decode(base64url(all)), all);
  EXPECT_FALSE(base64url_decode("Zg=="));  // padding is not part of base64url in JWS
  EXPECT_FALSE(base64url_decode("Z"));     // no byte ends after 6 bits
  EXPECT_FALSE(base64url_decode("Zh"));    // nonzero leftover bits
  EXPECT_FALSE(base64url_decode("Zm+v"));  // the standard alphabet's '+' and '/'
  EXPECT_FALSE(base64url_decode("Zm9v\n"));
}

TEST(AcmeJws, JwkHasTheThumbprintFormAndTheKeysCoordinates) {
  std::string pem = make_account_key();
  account_key key(pem);
  // RFC 7638 section 3.2: required members only, lexicographic order, no whitespace.
  EXPECT_EQ(key.jwk().rfind(R"({"crv":"P-256","kty":"EC","x":")", 0), 0u) << key.jwk();
  EXPECT_EQ(key.jwk().find(' '), std::string::npos);
  auto jwk = json::parse(key.jwk()).as_object();
  EXPECT_EQ(jwk.size(), 4u);
  EXPECT_EQ(decoded(jwk.at("x").as_string()).size(), 32u);
  EXPECT_EQ(decoded(jwk.at("y").as_string()).size(), 32u);
  auto rebuilt = key_from_jwk(jwk);
  EXPECT_EQ(EVP_PKEY_eq(rebuilt.get(), key.native()), 1);
}

TEST(AcmeJws, ThumbprintIsStableAndIsTheJwkDigest) {
  std::string pem = make_account_key();
  account_key a(pem);
  account_key b(pem);
  account_key other(make_account_key());
  EXPECT_EQ(a.thumbprint(), b.thumbprint());
  EXPECT_NE(a.thumbprint(), other.thumbprint());
  EXPECT_EQ(a.thumbprint().size(), 43u);
  EXPECT_EQ(a.thumbprint(), base64url(sha256(a.jwk())));
  EXPECT_EQ(decoded(a.thumbprint()).size(), 32u);
  EXPECT_EQ(key_authorization("tok-en_1", a), "tok-en_1." + a.thumbprint());
}

TEST(AcmeJws, RejectsKeysOtherThanP256) {
  EVP_PKEY* rsa = EVP_RSA_gen(2048);
  ASSERT_NE(rsa, nullptr);
  BIO* out = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(out, rsa, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long len = BIO_get_mem_data(out, &data);
  std::string rsa_pem(data, static_cast<std::size_t>(len));
  BIO_free(out);
  EVP_PKEY_free(rsa);
  EXPECT_THROW(account_key{rsa_pem}, std::runtime_error);
  EXPECT_THROW(account_key{"not a key"}, std::runtime_error);
}

TEST(AcmeJws, NewAccountJwsVerifiesWithItsOwnJwk) {
  account_key key(make_account_key());
  std::string payload = R"({"termsOfServiceAgreed":true})";
  auto jws =
      json::parse(sign_jws(key, payload, "nonce-1", "https://ca.test/new-acct", "")).as_object();
  EXPECT_EQ(jws.size(), 3u);
  std::string protected_b64(jws.at("protected").as_string());
  std::string payload_b64(jws.at("payload").as_string());
  EXPECT_EQ(decoded(payload_b64), payload);
  auto header = json::parse(decoded(protected_b64)).as_object();
  EXPECT_EQ(header.at("alg").as_string(), "ES256");
  EXPECT_EQ(header.at("nonce").as_string(), "nonce-1");
  EXPECT_EQ(header.at("url").as_string(), "https://ca.test/new-acct");
  EXPECT_FALSE(header.contains("kid"));
  auto signer = key_from_jwk(header.at("jwk").as_object());
  std::string sig = decoded(jws.at("signature").as_string());
  EXPECT_EQ(sig.size(), 64u);
  EXPECT_TRUE(verifies(signer.get(), protected_b64 + "." + payload_b64, sig));
  EXPECT_FALSE(verifies(signer.get(), protected_b64 + "." + payload_b64 + "x", sig));
}

TEST(AcmeJws, PostAsGetUsesKidAndAnEmptyPayload) {
  account_key key(make_account_key());
  auto jws =
      json::parse(sign_jws(key, "", "n2", "https://ca.test/authz/1", "https://ca.test/acct/7"))
          .as_object();
  EXPECT_EQ(jws.at("payload").as_string(), "");
  std::string protected_b64(jws.at("protected").as_string());
  auto header = json::parse(decoded(protected_b64)).as_object();
  EXPECT_EQ(header.at("kid").as_string(), "https://ca.test/acct/7");
  EXPECT_FALSE(header.contains("jwk"));
  auto signer = key_from_jwk(json::parse(key.jwk()).as_object());
  EXPECT_TRUE(
      verifies(signer.get(), protected_b64 + ".", decoded(jws.at("signature").as_string())));
}

}  // namespace
}  // namespace burrow::acme
