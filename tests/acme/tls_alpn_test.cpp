// The TLS-ALPN-01 certificate's contents, and a real loopback handshake against a web server
// context with enable_tls_alpn_01: acme-tls/1 gets the challenge, everything else is unchanged.
#include "acme/tls_alpn.hpp"

#include <gtest/gtest.h>
#include <openssl/x509v3.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_future.hpp>
#include <thread>

#include "acme/challenge_responder.hpp"
#include "core/secret.hpp"
#include "tls/contexts.hpp"

namespace burrow::acme {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr const char* domain = "app.burrow.test";

struct probe_result {
  bool handshake_ok = false;
  std::string alpn;
  std::string fingerprint;
};

asio::awaitable<probe_result> probe_once(std::uint16_t port, std::string sni,
                                         asio::ssl::context* tls) {
  auto executor = co_await asio::this_coro::executor;
  asio::ssl::stream<tcp::socket> stream(executor, *tls);
  SSL* ssl = stream.native_handle();
  SSL_set_tlsext_host_name(ssl, sni.c_str());
  tcp::endpoint server(asio::ip::address_v4::loopback(), port);
  auto [connect_ec] = co_await stream.lowest_layer().async_connect(server, use_tuple);
  probe_result r;
  if (connect_ec) co_return r;
  auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::client, use_tuple);
  if (ec) co_return r;
  r.handshake_ok = true;
  const unsigned char* alpn = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl, &alpn, &len);
  r.alpn.assign(reinterpret_cast<const char*>(alpn), len);
  r.fingerprint = tls::peer_fingerprint(ssl);
  // The server counts the handshake before it closes; reading to the end waits for that.
  char byte;
  co_await asio::async_read(stream, asio::buffer(&byte, 1), use_tuple);
  co_return r;
}

// A TLS client offering `alpn` (none if empty) with `sni`, trusting anything: the test looks at
// what it was given.
probe_result probe(std::uint16_t port, const std::string& sni, const std::vector<std::string>& alpn,
                   int max_version = TLS1_3_VERSION) {
  asio::ssl::context tls(asio::ssl::context::tls_client);
  SSL_CTX_set_max_proto_version(tls.native_handle(), max_version);
  std::string wire;
  for (const auto& p : alpn) wire += static_cast<char>(p.size()) + p;
  if (!wire.empty())
    SSL_CTX_set_alpn_protos(tls.native_handle(),
                            reinterpret_cast<const unsigned char*>(wire.data()),
                            static_cast<unsigned>(wire.size()));
  asio::io_context io;
  auto result = asio::co_spawn(io, probe_once(port, sni, &tls), asio::use_future);
  io.run_for(10s);
  if (result.wait_for(0s) != std::future_status::ready) {
    ADD_FAILURE() << "probe with SNI " << sni << " did not finish";
    return {};
  }
  return result.get();
}

std::string digest_in_extension(X509* cert, int* critical) {
  ASN1_OBJECT* oid = OBJ_txt2obj("1.3.6.1.5.5.7.1.31", 1);
  int index = X509_get_ext_by_OBJ(cert, oid, -1);
  ASN1_OBJECT_free(oid);
  if (index < 0) return {};
  X509_EXTENSION* ext = X509_get_ext(cert, index);
  *critical = X509_EXTENSION_get_critical(ext);
  ASN1_OCTET_STRING* outer = X509_EXTENSION_get_data(ext);
  const unsigned char* p = ASN1_STRING_get0_data(outer);
  ASN1_OCTET_STRING* inner = d2i_ASN1_OCTET_STRING(nullptr, &p, ASN1_STRING_length(outer));
  if (!inner) return {};
  std::string out(reinterpret_cast<const char*>(ASN1_STRING_get0_data(inner)),
                  static_cast<std::size_t>(ASN1_STRING_length(inner)));
  ASN1_OCTET_STRING_free(inner);
  return out;
}

TEST(AcmeTlsAlpn, ChallengeCertificateHasTheCriticalAcmeIdentifier) {
  const std::string key_auth = "token-123.thumbprint-abc";
  auto pair = make_challenge_certificate(domain, key_auth);
  EXPECT_TRUE(tls::key_matches(pair));
  EXPECT_EQ(tls::subject_alt_names(pair.cert_pem), std::vector<std::string>{domain});
  auto cert = tls::parse_certificate(pair.cert_pem);
  int critical = 0;
  auto digest = sha256(key_auth);
  EXPECT_EQ(digest_in_extension(cert.get(), &critical),
            std::string(reinterpret_cast<const char*>(digest.data()), digest.size()));
  EXPECT_EQ(critical, 1);
  EXPECT_GT(tls::not_after(pair.cert_pem), std::chrono::system_clock::now());
  EXPECT_THROW(make_challenge_certificate("", key_auth), std::invalid_argument);
  EXPECT_THROW(make_challenge_certificate("a b", key_auth), std::invalid_argument);
}

TEST(AcmeTlsAlpn, StoreFindsByDomainIgnoringCase) {
  challenge_store store;
  auto pair = make_challenge_certificate(domain, "k");
  store.put("App.Burrow.Test", pair);
  EXPECT_EQ(store.size(), 1u);
  auto found = store.find(domain);
  ASSERT_TRUE(found);
  EXPECT_EQ(tls::fingerprint_sha256(found->cert.get()), tls::fingerprint_sha256(pair.cert_pem));
  EXPECT_FALSE(store.find("other.burrow.test"));
  EXPECT_FALSE(store.find(""));
  store.remove("APP.burrow.test");
  EXPECT_FALSE(store.find(domain));
  tls::key_pair mismatched{pair.cert_pem, make_challenge_certificate(domain, "k").key_pem};
  EXPECT_THROW(store.put(domain, mismatched), std::runtime_error);
}

class AcmeTlsAlpnServer : public ::testing::Test {
 protected:
  AcmeTlsAlpnServer()
      : identity_(tls::make_self_signed(domain, {domain}, std::chrono::hours(1))),
        plain_ctx_(tls::make_web_server_context(identity_)),
        acme_ctx_(tls::make_web_server_context(identity_)),
        store_(std::make_shared<challenge_store>()),
        challenge_(make_challenge_certificate(domain, "token.thumb")) {
    enable_tls_alpn_01(acme_ctx_.native_handle(), store_);
    store_->put(domain, challenge_);
  }

  tls::key_pair identity_;
  asio::ssl::context plain_ctx_;
  asio::ssl::context acme_ctx_;
  std::shared_ptr<challenge_store> store_;
  tls::key_pair challenge_;
};

TEST_F(AcmeTlsAlpnServer, AcmeTls1GetsTheChallengeCertificate) {
  test::challenge_responder server(acme_ctx_);
  for (int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
    auto r = probe(server.port(), domain, {"acme-tls/1"}, version);
    EXPECT_TRUE(r.handshake_ok) << version;
    EXPECT_EQ(r.alpn, "acme-tls/1");
    EXPECT_EQ(r.fingerprint, tls::fingerprint_sha256(challenge_.cert_pem));
  }
  auto upper = probe(server.port(), "APP.BURROW.TEST", {"http/1.1", "acme-tls/1"});
  EXPECT_EQ(upper.alpn, "acme-tls/1");
  EXPECT_EQ(upper.fingerprint, tls::fingerprint_sha256(challenge_.cert_pem));
  EXPECT_EQ(server.seen().answered.load(), 3u);
}

TEST_F(AcmeTlsAlpnServer, OtherClientsSeeWhatTheyWouldWithoutIt) {
  test::challenge_responder with(acme_ctx_);
  test::challenge_responder without(plain_ctx_);
  const std::string normal = tls::fingerprint_sha256(identity_.cert_pem);
  struct probe_case {
    std::string sni;
    std::vector<std::string> alpn;
  };
  std::vector<probe_case> cases = {
      {domain, {"http/1.1"}},
      {domain, {}},
      {domain, {"h2", "http/1.1"}},
      {domain, {"h2"}},                       // refused by both
      {"other.burrow.test", {"acme-tls/1"}},  // no challenge for that name: refused by both
      {"other.burrow.test", {"acme-tls/1", "http/1.1"}},
  };
  for (const auto& c : cases) {
    auto a = probe(with.port(), c.sni, c.alpn);
    auto b = probe(without.port(), c.sni, c.alpn);
    std::string label = c.sni + " offering " + std::to_string(c.alpn.size()) + " protocols";
    EXPECT_EQ(a.handshake_ok, b.handshake_ok) << label;
    EXPECT_EQ(a.alpn, b.alpn) << label;
    EXPECT_EQ(a.fingerprint, b.fingerprint) << label;
    if (a.handshake_ok) {
      EXPECT_EQ(a.fingerprint, normal) << label;
    }
  }
  EXPECT_TRUE(probe(with.port(), domain, {"http/1.1"}).handshake_ok);
  EXPECT_EQ(probe(with.port(), domain, {"http/1.1"}).alpn, "http/1.1");
  EXPECT_EQ(with.seen().answered.load(), 0u);
}

TEST_F(AcmeTlsAlpnServer, RemovedChallengeIsNoLongerAnswered) {
  test::challenge_responder server(acme_ctx_);
  store_->remove(domain);
  auto r = probe(server.port(), domain, {"acme-tls/1"});
  EXPECT_FALSE(r.handshake_ok);  // as without the hook: no protocol in common
  auto normal = probe(server.port(), domain, {"acme-tls/1", "http/1.1"});
  EXPECT_EQ(normal.alpn, "http/1.1");
  EXPECT_EQ(normal.fingerprint, tls::fingerprint_sha256(identity_.cert_pem));
  EXPECT_EQ(server.seen().answered.load(), 0u);
}

}  // namespace
}  // namespace burrow::acme
