// End to end against a real ACME server: pebble validates our TLS-ALPN-01 answer on loopback
// (its names resolved by pebble-challtestsrv's mock DNS) and issues for the caller's key.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509_vfy.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <filesystem>
#include <fstream>
#include <regex>

#include "acme/challenge_responder.hpp"
#include "acme/client.hpp"
#include "acme/https.hpp"
#include "acme/jws.hpp"
#include "acme/tls_alpn.hpp"
#include "core/secret.hpp"
#include "harness/pebble.hpp"
#include "harness/process.hpp"
#include "tls/contexts.hpp"

namespace burrow::acme {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
constexpr const char* domain = "acme-test.burrow.localhost";

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::vector<tls::x509_ptr> certificates_in(const std::string& pem) {
  std::vector<tls::x509_ptr> out;
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  while (X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) out.emplace_back(x);
  BIO_free(bio);
  ERR_clear_error();
  return out;
}

// "" when `chain` (leaf first) verifies up to `root_pem` for `host`, else OpenSSL's reason.
std::string verify_chain(const std::string& chain, const std::string& root_pem,
                         const std::string& host) {
  auto certs = certificates_in(chain);
  auto roots = certificates_in(root_pem);
  if (certs.empty() || roots.empty()) return "no certificates";
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, roots.front().get());
  STACK_OF(X509)* untrusted = sk_X509_new_null();
  for (std::size_t i = 1; i < certs.size(); ++i) sk_X509_push(untrusted, certs[i].get());
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, certs.front().get(), untrusted);
  X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(ctx), host.c_str(), 0);
  X509_VERIFY_PARAM_set_purpose(X509_STORE_CTX_get0_param(ctx), X509_PURPOSE_SSL_SERVER);
  std::string error;
  if (X509_verify_cert(ctx) != 1)
    error = X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx));
  X509_STORE_CTX_free(ctx);
  sk_X509_free(untrusted);
  X509_STORE_free(store);
  return error;
}

class AcmePebbleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::pebble_server::available())
      GTEST_SKIP() << "pebble is not installed (apt-get install pebble)";
    dir_ = fs::temp_directory_path() / ("burrow-acme-test-" + random_token().substr(4, 12));
    fs::create_directories(dir_);

    // The agent's side: a web server context answering TLS-ALPN-01 from the store.
    web_ctx_ = std::make_unique<asio::ssl::context>(
        tls::make_web_server_context(tls::make_self_signed(domain, {domain}, 24h)));
    enable_tls_alpn_01(web_ctx_->native_handle(), store_);
    responder_ = std::make_unique<test::challenge_responder>(*web_ctx_);

    pebble_ = std::make_unique<test::pebble_server>(dir_, responder_->port());
  }

  void TearDown() override {
    pebble_.reset();
    responder_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  acme_request request(const std::string& account_key, const std::string& cert_key) {
    acme_request r;
    r.directory_url = pebble_->directory_url();
    r.ca_file = pebble_->ca_file();
    r.account_key_pem = account_key;
    r.domain = domain;
    r.cert_key_pem = cert_key;
    r.install_challenge = [this](std::string name, tls::key_pair cert) {
      ++installs_;
      store_->put(name, cert);
    };
    r.remove_challenge = [this](std::string name) {
      ++removals_;
      store_->remove(name);
    };
    r.timeouts.request = 10s;
    r.timeouts.total = 60s;
    r.timeouts.poll_interval = 200ms;
    r.timeouts.max_poll_interval = 2s;
    return r;
  }

  static acme_result obtain(acme_request r) {
    asio::io_context io;
    auto limit = r.timeouts.total + 5s;
    auto result = asio::co_spawn(io, obtain_certificate(std::move(r)), asio::use_future);
    io.run_for(limit);
    if (result.wait_for(0s) != std::future_status::ready) {
      ADD_FAILURE() << "obtain_certificate did not finish within its deadline";
      return {};
    }
    return result.get();
  }

  std::string pebble_root() { return pebble_->root_pem(); }

  fs::path dir_;
  std::shared_ptr<challenge_store> store_ = std::make_shared<challenge_store>();
  std::unique_ptr<asio::ssl::context> web_ctx_;
  std::unique_ptr<test::challenge_responder> responder_;
  std::unique_ptr<test::pebble_server> pebble_;
  int installs_ = 0;
  int removals_ = 0;
};

TEST_F(AcmePebbleTest, IssuesForTheCallersKeyAndReusesTheAccount) {
  const std::string account = make_account_key();
  const auto agent = tls::make_self_signed("agent", {"agent"}, 1h);  // only its key is used
  auto result = obtain(request(account, agent.key_pem));
  ASSERT_TRUE(result.ok()) << result.error;
  EXPECT_FALSE(result.account_url.empty());
  EXPECT_TRUE(tls::key_matches({result.chain_pem, agent.key_pem}));
  EXPECT_EQ(tls::subject_alt_names(result.chain_pem), std::vector<std::string>{domain});
  EXPECT_GE(certificates_in(result.chain_pem).size(), 2u);  // leaf and intermediate
  EXPECT_EQ(verify_chain(result.chain_pem, pebble_root(), domain), "");
  EXPECT_EQ(installs_, 1);
  EXPECT_EQ(removals_, 1);
  EXPECT_EQ(store_->size(), 0u);
  EXPECT_GE(responder_->seen().answered.load(), 1u);  // pebble really asked over acme-tls/1

  // Same account key: the existing account is found, and a second key gets its own certificate.
  const auto second_key = tls::make_self_signed("agent2", {"agent2"}, 1h);
  auto again = obtain(request(account, second_key.key_pem));
  ASSERT_TRUE(again.ok()) << again.error;
  EXPECT_EQ(again.account_url, result.account_url);
  EXPECT_TRUE(tls::key_matches({again.chain_pem, second_key.key_pem}));
  EXPECT_EQ(removals_, installs_);
}

TEST_F(AcmePebbleTest, ReportsAFailedValidation) {
  auto r = request(make_account_key(), tls::make_self_signed("a", {"a"}, 1h).key_pem);
  r.install_challenge = [this](std::string, tls::key_pair) { ++installs_; };  // answers nothing
  auto result = obtain(std::move(r));
  EXPECT_FALSE(result.ok());
  EXPECT_NE(result.error.find(std::string("validation of ") + domain + " failed"),
            std::string::npos)
      << result.error;
  EXPECT_NE(result.error.find("urn:ietf:params:acme:error:"), std::string::npos) << result.error;
  EXPECT_EQ(installs_, 1);
  EXPECT_EQ(removals_, 1);
}

TEST_F(AcmePebbleTest, RefusesAnAcmeServerItDoesNotTrust) {
  auto r = request(make_account_key(), tls::make_self_signed("a", {"a"}, 1h).key_pem);
  auto other_ca = tls::make_ca("someone else", 1h);
  write_text(dir_ / "other-ca.pem", other_ca.cert_pem);
  r.ca_file = (dir_ / "other-ca.pem").string();
  auto result = obtain(std::move(r));
  EXPECT_FALSE(result.ok());
  EXPECT_NE(result.error.find("certificate"), std::string::npos) << result.error;
  EXPECT_EQ(installs_, 0);
}

}  // namespace
}  // namespace burrow::acme
