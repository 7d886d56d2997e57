// Real TLS 1.3 handshakes on loopback: pin mode, chain mode, host checks, ALPN and SSLKEYLOGFILE.
#include "tls/contexts.hpp"

#include "core/secret.hpp"
#include "tls/cipher_order.hpp"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

namespace burrow::tls {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using asio::ip::tcp;
using namespace std::chrono_literals;

struct temp_dir {
  fs::path path = fs::temp_directory_path() / ("burrow-tls-test-" + random_token().substr(4));
  temp_dir() { fs::create_directories(path); }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

struct handshake_result {
  std::optional<boost::system::error_code> client_ec;  // unset: did not finish in time
  std::optional<boost::system::error_code> server_ec;
  std::string client_alpn;
  std::string server_alpn;
  std::string peer_fingerprint;
  std::string cipher;  // the suite both sides agreed on, from the client
  int version = 0;
  verification_outcome outcome;
};

std::string selected_alpn(SSL* ssl) {
  const unsigned char* data = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl, &data, &len);
  return std::string(reinterpret_cast<const char*>(data), len);
}

// One handshake between a server and a client on 127.0.0.1, bounded by a deadline.
handshake_result handshake(asio::ssl::context& server_ctx, asio::ssl::context& client_ctx,
                           const peer_verification& verification) {
  handshake_result r;
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  asio::ssl::stream<tcp::socket> server(io, server_ctx);
  asio::ssl::stream<tcp::socket> client(io, client_ctx);
  apply_peer_verification(client.native_handle(), verification, &r.outcome);

  acceptor.async_accept(server.next_layer(), [&](boost::system::error_code ec) {
    if (ec) {
      r.server_ec = ec;
      return;
    }
    server.async_handshake(asio::ssl::stream_base::server, [&](boost::system::error_code ec) {
      r.server_ec = ec;
      if (!ec) r.server_alpn = selected_alpn(server.native_handle());
    });
  });
  client.next_layer().async_connect(acceptor.local_endpoint(), [&](boost::system::error_code ec) {
    if (ec) {
      r.client_ec = ec;
      return;
    }
    client.async_handshake(asio::ssl::stream_base::client, [&](boost::system::error_code ec) {
      r.client_ec = ec;
      if (ec) {
        // Unblock a server still waiting for the client's flight.
        boost::system::error_code ignored;
        client.next_layer().close(ignored);
        return;
      }
      r.client_alpn = selected_alpn(client.native_handle());
      r.peer_fingerprint = peer_fingerprint(client.native_handle());
      r.version = SSL_version(client.native_handle());
      r.cipher = SSL_CIPHER_get_name(SSL_get_current_cipher(client.native_handle()));
    });
  });
  io.run_for(10s);
  return r;
}

struct TlsHandshake : ::testing::Test {
  key_pair self_signed = make_self_signed("burrow test", {"localhost"}, 24h);
  key_pair ca = make_ca("burrow test CA", 24h);
  key_pair leaf = make_leaf(ca, "relay", {"localhost"}, {"127.0.0.1", "::1"}, 24h);
  temp_dir dir;
  std::string ca_file = (dir.path / "ca.pem").string();

  void SetUp() override { write_private_file(ca_file, ca.cert_pem); }
};

TEST_F(TlsHandshake, MatchingPinSucceedsAndNegotiatesAlpn) {
  auto server_ctx = make_server_context(self_signed, {"burrow/1", "h2"});
  auto client_ctx = make_client_context({"h2", "burrow/1"});
  auto fp = fingerprint_sha256(self_signed.cert_pem);
  auto r = handshake(server_ctx, client_ctx, {fp, "", "localhost"});
  ASSERT_TRUE(r.client_ec && r.server_ec) << "handshake did not finish";
  ASSERT_FALSE(*r.client_ec) << r.client_ec->message();
  ASSERT_FALSE(*r.server_ec) << r.server_ec->message();
  EXPECT_EQ(r.version, TLS1_3_VERSION);
  EXPECT_EQ(r.client_alpn, "burrow/1");  // the server's preference wins
  EXPECT_EQ(r.server_alpn, "burrow/1");
  EXPECT_EQ(r.outcome.seen_fingerprint, fp);
  EXPECT_FALSE(r.outcome.pin_mismatch);
  EXPECT_EQ(r.peer_fingerprint, fp);
}

TEST_F(TlsHandshake, PinInNonCanonicalFormIsAccepted) {
  auto server_ctx = make_server_context(self_signed, {"burrow/1"});
  auto client_ctx = make_client_context({"burrow/1"});
  auto fp = fingerprint_sha256(self_signed.cert_pem);
  std::string upper = "SHA256:";
  for (char c : fp.substr(7)) upper += static_cast<char>(std::toupper(c));
  auto r = handshake(server_ctx, client_ctx, {upper, "", "127.0.0.1"});
  ASSERT_TRUE(r.client_ec && r.server_ec) << "handshake did not finish";
  EXPECT_FALSE(*r.client_ec) << r.client_ec->message();
  EXPECT_EQ(r.outcome.seen_fingerprint, fp);
}

TEST_F(TlsHandshake, WrongPinFailsAndReportsSeenFingerprint) {
  auto server_ctx = make_server_context(self_signed, {"burrow/1"});
  auto client_ctx = make_client_context({"burrow/1"});
  auto wrong = fingerprint_sha256(leaf.cert_pem);
  auto r = handshake(server_ctx, client_ctx, {wrong, "", "localhost"});
  ASSERT_TRUE(r.client_ec && r.server_ec) << "handshake did not finish";
  EXPECT_TRUE(*r.client_ec);
  EXPECT_TRUE(*r.server_ec);
  EXPECT_TRUE(r.outcome.pin_mismatch);
  EXPECT_EQ(r.outcome.seen_fingerprint, fingerprint_sha256(self_signed.cert_pem));
}

TEST_F(TlsHandshake, ChainModeWithCaFileSucceeds) {
  auto server_ctx = make_server_context(leaf, {"burrow/1"});
  auto client_ctx = make_client_context({"burrow/1"});
  for (const char* host : {"localhost", "127.0.0.1"}) {
    auto r = handshake(server_ctx, client_ctx, {"", ca_file, host});
    ASSERT_TRUE(r.client_ec && r.server_ec) << "handshake did not finish";
    EXPECT_FALSE(*r.client_ec) << host << ": " << r.client_ec->message() << " "
                               << r.outcome.chain_error;
    EXPECT_FALSE(*r.server_ec) << host << ": " << r.server_ec->message();
    EXPECT_EQ(r.outcome.chain_error, "");
    EXPECT_EQ(r.peer_fingerprint, fingerprint_sha256(leaf.cert_pem));
    EXPECT_EQ(r.client_alpn, "burrow/1");
  }
}

TEST_F(TlsHandshake, ChainModeWithWrongHostFails) {
  auto server_ctx = make_server_context(leaf, {"burrow/1"});
  auto client_ctx = make_client_context({"burrow/1"});
  for (const char* host : {"wrong.example.test", "127.0.0.2"}) {
    auto r = handshake(server_ctx, client_ctx, {"", ca_file, host});
    ASSERT_TRUE(r.client_ec && r.server_ec) << "handshake did not finish";
    EXPECT_TRUE(*r.client_ec) << host;
    EXPECT_NE(r.outcome.chain_error, "") << host;
    EXPECT_FALSE(r.outcome.pin_mismatch);
  }
}

TEST_F(TlsHandshake, ChainModeWithoutTrustedCaFails) {
  auto server_ctx = make_server_context(leaf, {"burrow/1"});
  auto client_ctx = make_client_context({"burrow/1"});
  auto r = handshake(server_ctx, client_ctx, {"", "", "localhost"});  // system store only
  ASSERT_TRUE(r.client_ec && r.server_ec) << "handshake did not finish";
  EXPECT_TRUE(*r.client_ec);
  EXPECT_NE(r.outcome.chain_error, "");
}

// A context for peers verified by pin or CA file (the agent's and `burrow connect`'s link with
// --relay-pin or --relay-ca, end to end always) verifies them as one with the system store does.
TEST_F(TlsHandshake, PinAndCaFileWorkWithoutTheSystemStore) {
  auto client_ctx = make_client_context({"burrow/1"}, trust::pins_and_ca_files);
  auto pinned_server = make_server_context(self_signed, {"burrow/1"});
  auto fp = fingerprint_sha256(self_signed.cert_pem);
  auto pinned = handshake(pinned_server, client_ctx, {fp, "", "localhost"});
  ASSERT_TRUE(pinned.client_ec && pinned.server_ec) << "handshake did not finish";
  EXPECT_FALSE(*pinned.client_ec) << pinned.client_ec->message();
  auto wrong = handshake(pinned_server, client_ctx, {fingerprint_sha256(leaf.cert_pem), "", ""});
  ASSERT_TRUE(wrong.client_ec) << "handshake did not finish";
  EXPECT_TRUE(*wrong.client_ec);
  EXPECT_TRUE(wrong.outcome.pin_mismatch);

  auto chained_server = make_server_context(leaf, {"burrow/1"});
  auto chained = handshake(chained_server, client_ctx, {"", ca_file, "localhost"});
  ASSERT_TRUE(chained.client_ec) << "handshake did not finish";
  EXPECT_FALSE(*chained.client_ec)
      << chained.client_ec->message() << " " << chained.outcome.chain_error;
  // With neither, nothing is trusted.
  auto bare = handshake(chained_server, client_ctx, {"", "", "localhost"});
  ASSERT_TRUE(bare.client_ec) << "handshake did not finish";
  EXPECT_TRUE(*bare.client_ec);
  EXPECT_NE(bare.outcome.chain_error, "");
}

TEST_F(TlsHandshake, AlpnMismatchFailsWithNoApplicationProtocol) {
  auto server_ctx = make_server_context(self_signed, {"burrow/1"});
  auto client_ctx = make_client_context({"h2"});
  auto r = handshake(server_ctx, client_ctx, {fingerprint_sha256(self_signed.cert_pem), "", ""});
  ASSERT_TRUE(r.client_ec && r.server_ec) << "handshake did not finish";
  ASSERT_TRUE(*r.client_ec);
  EXPECT_TRUE(*r.server_ec);
  EXPECT_EQ(ERR_GET_REASON(static_cast<unsigned long>(r.client_ec->value())),
            SSL_R_TLSV1_ALERT_NO_APPLICATION_PROTOCOL)
      << r.client_ec->message();
}

TEST_F(TlsHandshake, ServerWithoutAlpnAcceptsAnyClient) {
  auto server_ctx = make_server_context(self_signed, {});
  auto client_ctx = make_client_context({"h2"});
  auto r = handshake(server_ctx, client_ctx, {fingerprint_sha256(self_signed.cert_pem), "", ""});
  ASSERT_TRUE(r.client_ec && r.server_ec) << "handshake did not finish";
  EXPECT_FALSE(*r.client_ec) << r.client_ec->message();
  EXPECT_EQ(r.client_alpn, "");
}

// The suite a server context picks for a client offering TLS 1.3 suites in `client_order`.
std::string negotiated_tls13(asio::ssl::context& server_ctx, aead_order client_order,
                             const std::string& pin) {
  auto client_ctx = make_client_context({});
  EXPECT_EQ(SSL_CTX_set_ciphersuites(client_ctx.native_handle(), tls13_ciphersuites(client_order)),
            1);
  auto r = handshake(server_ctx, client_ctx, {pin, "", ""});
  EXPECT_TRUE(r.client_ec && !*r.client_ec) << (r.client_ec ? r.client_ec->message() : "timeout");
  return r.cipher;
}

// A server picks by its own list (AES-128-GCM first on a CPU with AES instructions), but a
// client leading with ChaCha20-Poly1305, one without them, gets ChaCha20-Poly1305.
TEST_F(TlsHandshake, ServersFollowAClientThatLeadsWithChaCha20) {
  const std::string own_first = preferred_aead_order() == aead_order::aes_gcm_first
                                    ? "TLS_AES_128_GCM_SHA256"
                                    : "TLS_CHACHA20_POLY1305_SHA256";
  const auto pin = fingerprint_sha256(self_signed.cert_pem);
  auto link_server = make_server_context(self_signed, {});
  auto web_server = make_web_server_context(self_signed);
  for (auto* server : {&link_server, &web_server}) {
    EXPECT_EQ(negotiated_tls13(*server, aead_order::chacha20_first, pin),
              "TLS_CHACHA20_POLY1305_SHA256");
    EXPECT_EQ(negotiated_tls13(*server, aead_order::aes_gcm_first, pin), own_first);
  }
}

// Visitors on TLS 1.2 alike: ChaCha20-Poly1305 for a client that leads with it.
TEST_F(TlsHandshake, TheWebServerFollowsATls12ClientThatLeadsWithChaCha20) {
  auto server_ctx = make_web_server_context(self_signed);
  for (auto order : {aead_order::chacha20_first, aead_order::aes_gcm_first}) {
    auto client_ctx = make_client_context({});
    SSL_CTX* native = client_ctx.native_handle();
    ASSERT_EQ(SSL_CTX_set_max_proto_version(native, TLS1_2_VERSION), 1);
    ASSERT_EQ(SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION), 1);
    ASSERT_EQ(SSL_CTX_set_cipher_list(native, tls12_cipher_list(order)), 1);
    auto r = handshake(server_ctx, client_ctx, {fingerprint_sha256(self_signed.cert_pem), "", ""});
    ASSERT_TRUE(r.client_ec && !*r.client_ec) << (r.client_ec ? r.client_ec->message() : "timeout");
    EXPECT_EQ(r.version, TLS1_2_VERSION);
    const bool expect_chacha =
        order == aead_order::chacha20_first || preferred_aead_order() == aead_order::chacha20_first;
    EXPECT_NE(r.cipher.find(expect_chacha ? "CHACHA20-POLY1305" : "AES128-GCM"), std::string::npos)
        << r.cipher;
  }
}

// Our own clients lead with the suite this CPU runs fast.
using ssl_ptr = std::unique_ptr<SSL, openssl_deleter<&SSL_free>>;

TEST_F(TlsHandshake, ClientsOfferTheirCpusPreferredSuiteFirst) {
  auto client_ctx = make_client_context({});
  ssl_ptr ssl(SSL_new(client_ctx.native_handle()));
  ASSERT_TRUE(ssl);
  STACK_OF(SSL_CIPHER)* offered = SSL_get_ciphers(ssl.get());
  ASSERT_GT(sk_SSL_CIPHER_num(offered), 0);
  const std::string first = SSL_CIPHER_get_name(sk_SSL_CIPHER_value(offered, 0));
  EXPECT_EQ(first,
            cpu_accelerates_aes_gcm() ? "TLS_AES_128_GCM_SHA256" : "TLS_CHACHA20_POLY1305_SHA256");
}

// Sets SSLKEYLOGFILE (nullopt: unsets it) for one scope and restores what was there before, so
// no other test, nor a process started by one, inherits it.
class scoped_keylog_variable {
 public:
  explicit scoped_keylog_variable(const std::optional<std::string>& value) {
    if (const char* old = std::getenv("SSLKEYLOGFILE")) old_ = old;
    if (value)
      ::setenv("SSLKEYLOGFILE", value->c_str(), 1);
    else
      ::unsetenv("SSLKEYLOGFILE");
  }
  ~scoped_keylog_variable() {
    if (old_)
      ::setenv("SSLKEYLOGFILE", old_->c_str(), 1);
    else
      ::unsetenv("SSLKEYLOGFILE");
  }
  scoped_keylog_variable(const scoped_keylog_variable&) = delete;
  scoped_keylog_variable& operator=(const scoped_keylog_variable&) = delete;

 private:
  std::optional<std::string> old_;
};

// Routes the default spdlog logger into a string for one scope.
class captured_log {
 public:
  captured_log()
      : saved_(spdlog::default_logger()),
        logger_(std::make_shared<spdlog::logger>(
            "captured", std::make_shared<spdlog::sinks::ostream_sink_mt>(out_))) {
    spdlog::set_default_logger(logger_);
  }
  ~captured_log() { spdlog::set_default_logger(saved_); }
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> saved_;
  std::shared_ptr<spdlog::logger> logger_;
};

// Every line of an NSS key log, by label; fails the test on a malformed line.
std::multimap<std::string, std::string> keylog_lines(const fs::path& path) {
  static const std::regex line_re("([A-Z_0-9]+) ([0-9a-f]{64}) ([0-9a-f]{64,128})");
  std::multimap<std::string, std::string> lines;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    EXPECT_TRUE(std::regex_match(line, m, line_re)) << path << ": " << line;
    if (!m.empty()) lines.emplace(m[1].str(), line);
  }
  return lines;
}

TEST_F(TlsHandshake, KeyLogFileGetsTheSecretsOfEachSideWhenTheVariableIsSet) {
  const auto server_log = dir.path / "server.keys";
  const auto client_log = dir.path / "client.keys";
  captured_log log;
  // The variable is read when a context is made, so each side here writes its own file.
  auto server_ctx = [&] {
    scoped_keylog_variable v(server_log.string());
    return make_server_context(self_signed, {"burrow/1"});
  }();
  auto client_ctx = [&] {
    scoped_keylog_variable v(client_log.string());
    return make_client_context({"burrow/1"});
  }();
  auto r = handshake(server_ctx, client_ctx, {fingerprint_sha256(self_signed.cert_pem), "", ""});
  ASSERT_TRUE(r.client_ec && r.server_ec) << "handshake did not finish";
  ASSERT_FALSE(*r.client_ec) << r.client_ec->message();
  ASSERT_FALSE(*r.server_ec) << r.server_ec->message();

  std::set<std::string> client_lines;
  for (const auto& path : {server_log, client_log}) {
    ASSERT_TRUE(fs::exists(path)) << path;
    EXPECT_EQ(fs::status(path).permissions(), fs::perms::owner_read | fs::perms::owner_write);
    auto lines = keylog_lines(path);
    for (const char* label :
         {"CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET",
          "CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0", "EXPORTER_SECRET"})
      EXPECT_EQ(lines.count(label), 1u) << path << " lacks " << label;
    std::set<std::string> set;
    for (const auto& [label, line] : lines) set.insert(line);
    if (path == server_log)
      client_lines = set;
    else
      EXPECT_EQ(set, client_lines) << "both ends of one handshake derive the same secrets";
  }
  // Loud, and once per file rather than once per context.
  const auto text = log.text();
  EXPECT_NE(text.find("SSLKEYLOGFILE is set"), std::string::npos) << text;
  EXPECT_NE(text.find(server_log.string()), std::string::npos) << text;
  EXPECT_NE(text.find(client_log.string()), std::string::npos) << text;
}

TEST_F(TlsHandshake, KeyLogFileIsAppendedToAndSharedByContexts) {
  const auto keys = dir.path / "keys";
  scoped_keylog_variable v(keys.string());
  auto server_ctx = make_server_context(self_signed, {"burrow/1"});
  auto client_ctx = make_client_context({"burrow/1"});
  for (int i = 0; i < 2; ++i) {
    auto r = handshake(server_ctx, client_ctx, {fingerprint_sha256(self_signed.cert_pem), "", ""});
    ASSERT_TRUE(r.client_ec && !*r.client_ec);
  }
  // Two handshakes, each logged by both ends, all in one file.
  EXPECT_EQ(keylog_lines(keys).count("CLIENT_TRAFFIC_SECRET_0"), 4u);
}

TEST_F(TlsHandshake, NoKeyLogFileWhenTheVariableIsUnsetOrEmpty) {
  for (const std::optional<std::string>& value :
       {std::optional<std::string>(), std::optional<std::string>("")}) {
    scoped_keylog_variable v(value);
    captured_log log;
    auto server_ctx = make_server_context(self_signed, {"burrow/1"});
    auto client_ctx = make_client_context({"burrow/1"});
    auto r = handshake(server_ctx, client_ctx, {fingerprint_sha256(self_signed.cert_pem), "", ""});
    ASSERT_TRUE(r.client_ec && !*r.client_ec);
    EXPECT_EQ(log.text(), "");
  }
  // Nothing but the fixture's CA file.
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir.path)) files.push_back(e.path().filename());
  EXPECT_EQ(files, std::vector<fs::path>{"ca.pem"});
}

TEST(TlsContexts, RejectsBadArguments) {
  auto client_ctx = make_client_context({"burrow/1"});
  std::unique_ptr<SSL, openssl_deleter<&SSL_free>> ssl(SSL_new(client_ctx.native_handle()));
  ASSERT_TRUE(ssl);
  verification_outcome outcome;
  EXPECT_THROW(apply_peer_verification(ssl.get(), {"sha256:nothex", "", "localhost"}, &outcome),
               std::invalid_argument);
  EXPECT_THROW(apply_peer_verification(ssl.get(), {"", "", ""}, &outcome), std::invalid_argument);
  EXPECT_THROW(
      apply_peer_verification(ssl.get(), {"", "/nonexistent/ca.pem", "localhost"}, &outcome),
      std::runtime_error);
  EXPECT_THROW(make_client_context({""}), std::invalid_argument);
  EXPECT_EQ(peer_fingerprint(ssl.get()), "");
}

std::size_t trusted_certificates(asio::ssl::context& ctx) {
  const auto* objects = X509_STORE_get0_objects(SSL_CTX_get_cert_store(ctx.native_handle()));
  return objects ? static_cast<std::size_t>(sk_X509_OBJECT_num(objects)) : 0;
}

TEST(TlsContexts, TheSystemStoreIsReadOnlyWhenAPeerNeedsIt) {
  EXPECT_EQ(trust_for_peer("", ""), trust::system_store);
  EXPECT_EQ(trust_for_peer("sha256:00", ""), trust::pins_and_ca_files);
  EXPECT_EQ(trust_for_peer("", "/etc/relay-ca.pem"), trust::pins_and_ca_files);

  auto without = make_client_context({"burrow/1"}, trust::pins_and_ca_files);
  EXPECT_EQ(trusted_certificates(without), 0u);
  std::error_code ec;
  if (!fs::exists(X509_get_default_cert_file(), ec))
    GTEST_SKIP() << "no system bundle at " << X509_get_default_cert_file();
  auto with = make_client_context({"burrow/1"});
  EXPECT_GT(trusted_certificates(with), 10u);
}

TEST(TlsContexts, ServerRejectsKeyThatDoesNotMatch) {
  auto a = make_self_signed("a", {"a.test"}, 24h);
  auto b = make_self_signed("b", {"b.test"}, 24h);
  EXPECT_THROW(make_server_context({a.cert_pem, b.key_pem}, {}), std::runtime_error);
  EXPECT_THROW(make_server_context({"garbage", a.key_pem}, {}), std::runtime_error);
}

}  // namespace
}  // namespace burrow::tls
