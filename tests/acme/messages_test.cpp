// The ACME client's pure parts: problem documents, Retry-After and the order's CSR.
#include "acme/messages.hpp"

#include <gtest/gtest.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "tls/certs.hpp"

namespace burrow::acme {
namespace {

TEST(AcmeMessages, DescribesProblemDocuments) {
  EXPECT_EQ(
      describe_problem(
          400,
          R"({"type":"urn:ietf:params:acme:error:badNonce","detail":"JWS has an invalid anti-replay nonce"})"),
      "HTTP 400 urn:ietf:params:acme:error:badNonce: JWS has an invalid anti-replay nonce");
  EXPECT_EQ(describe_problem(500, "<html>oops</html>"), "HTTP 500");
  EXPECT_EQ(describe_problem(403, R"({"detail":"no\r\nsplit"})"), "HTTP 403: nosplit");
  std::string long_detail(5000, 'x');
  EXPECT_LT(describe_problem(400, R"({"detail":")" + long_detail + R"("})").size(), 400u);
  EXPECT_EQ(problem_type(R"({"type":"urn:ietf:params:acme:error:badNonce"})"),
            "urn:ietf:params:acme:error:badNonce");
  EXPECT_EQ(problem_type("[]"), "");
}

TEST(AcmeMessages, ParsesRetryAfterSeconds) {
  EXPECT_EQ(parse_retry_after("3"), std::chrono::seconds(3));
  EXPECT_EQ(parse_retry_after(" 120 "), std::chrono::seconds(120));
  EXPECT_EQ(parse_retry_after("0"), std::chrono::seconds(0));
  EXPECT_FALSE(parse_retry_after(""));
  EXPECT_FALSE(parse_retry_after("-1"));
  EXPECT_FALSE(parse_retry_after("1.5"));
  EXPECT_FALSE(parse_retry_after("99999999999999"));
  EXPECT_FALSE(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"));
}

TEST(AcmeMessages, OrderCsrIsDerWithTheDomainInSanAndTheCallersKey) {
  auto pair = tls::make_self_signed("x", {"x"}, std::chrono::hours(1));
  std::string der = make_order_csr(pair.key_pem, "app.burrow.example");
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  X509_REQ* req = d2i_X509_REQ(nullptr, &p, static_cast<long>(der.size()));
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(p, reinterpret_cast<const unsigned char*>(der.data()) + der.size());
  EVP_PKEY* pub = X509_REQ_get0_pubkey(req);
  EXPECT_EQ(X509_REQ_verify(req, pub), 1);
  auto key = tls::parse_private_key(pair.key_pem);
  EXPECT_EQ(EVP_PKEY_eq(pub, key.get()), 1);
  STACK_OF(X509_EXTENSION)* exts = X509_REQ_get_extensions(req);
  ASSERT_NE(exts, nullptr);
  auto* names =
      static_cast<GENERAL_NAMES*>(X509V3_get_d2i(exts, NID_subject_alt_name, nullptr, nullptr));
  ASSERT_NE(names, nullptr);
  ASSERT_EQ(sk_GENERAL_NAME_num(names), 1);
  const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, 0);
  ASSERT_EQ(name->type, GEN_DNS);
  EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(ASN1_STRING_get0_data(name->d.dNSName)),
                             static_cast<std::size_t>(ASN1_STRING_length(name->d.dNSName))),
            "app.burrow.example");
  GENERAL_NAMES_free(names);
  sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
  X509_REQ_free(req);
  EXPECT_THROW(make_order_csr(pair.key_pem, "bad name"), std::invalid_argument);
}

}  // namespace
}  // namespace burrow::acme
