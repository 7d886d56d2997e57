// HTTPS share URLs end to end: the relay routes by SNI without decrypting; real curl, openssl
// s_server as a local TLS service (passthrough), the relay's own pages for unknown and offline
// names.
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>

#include <fstream>
#include <thread>

#include "e2e/share_url_fixture.hpp"
#include "tls/certs.hpp"

namespace burrow::test {
namespace {

// True when the peer closes (end of file or reset) before the deadline.
bool closed_by_peer(int fd, std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  char buf[4096];
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
    if (n < 0) return false;
  }
  return false;
}

class passthrough_test : public share_url_test {
 protected:
  // A local TLS web server (openssl s_server -www) with its own self-signed certificate.
  std::unique_ptr<child_process> start_tls_service(std::uint16_t port, const std::string& name) {
    auto pair = tls::make_self_signed("local service", {name}, std::chrono::hours(24));
    service_fingerprint_ = tls::fingerprint_sha256(pair.cert_pem);
    std::ofstream(dir_ / "svc.crt") << pair.cert_pem;
    std::ofstream(dir_ / "svc.key") << pair.key_pem;
    auto p = child_process::start(
        "s_server",
        {"/usr/bin/openssl", "s_server", "-accept", "127.0.0.1:" + std::to_string(port), "-cert",
         (dir_ / "svc.crt").string(), "-key", (dir_ / "svc.key").string(), "-www"});
    EXPECT_TRUE(p->wait_for_line(std::regex("ACCEPT"), 10s)) << p->output();
    return p;
  }

  std::string service_fingerprint_;
};

TEST_F(passthrough_test, PassthroughReachesTheLocalTlsServiceUntouched) {
  auto relay = start_relay();
  ASSERT_NE(relay.https_port, 0);
  auto port = free_port();
  auto service = start_tls_service(port, "web.burrow.localhost");
  std::uint16_t share_port = 0;
  auto agent = start_http_agent(relay, port, "web", share_port);
  ASSERT_EQ(share_port, relay.https_port);

  auto page = curl("web.burrow.localhost", share_port, {"-k"});
  ASSERT_TRUE(page);
  EXPECT_NE(page->find("s_server"), std::string::npos) << *page;
  EXPECT_NE(page->find("status=200"), std::string::npos) << *page;

  // The certificate the visitor sees is the local service's own: TLS passed through the relay.
  auto seen = run({"/bin/sh", "-c",
                   "openssl s_client -connect 127.0.0.1:" + std::to_string(share_port) +
                       " -servername web.burrow.localhost </dev/null 2>/dev/null | openssl x509 "
                       "-noout -fingerprint -sha256"},
                  15s);
  ASSERT_TRUE(seen);
  // openssl prints the fingerprint as upper-case byte pairs joined by ':'.
  std::string upper;
  for (char c : service_fingerprint_.substr(7)) {
    if (!upper.empty() && upper.size() % 3 == 2) upper.push_back(':');
    upper.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  EXPECT_NE(seen->find(upper), std::string::npos) << *seen << " expected " << upper;
}

// The agent sees no requests in passthrough mode: connections keep the URL alive instead.
TEST_F(passthrough_test, ConnectionsKeepAPassthroughUrlFromIdleExpiry) {
  auto relay = start_relay();
  auto port = free_port();
  auto service = start_tls_service(port, "busy.burrow.localhost");
  std::uint16_t share_port = 0;
  auto agent =
      start_http_agent(relay, port, "busy", share_port, "passthrough", {"--idle-expiry", "3s"});
  for (int i = 0; i < 5; ++i) {
    auto page = curl("busy.burrow.localhost", share_port, {"-k"});
    ASSERT_TRUE(page) << i;
    EXPECT_NE(page->find("status=200"), std::string::npos) << i << *page;
    std::this_thread::sleep_for(1s);
  }
  EXPECT_EQ(agent->output().find("expired"), std::string::npos) << agent->output();
  EXPECT_TRUE(agent->wait_for_line(std::regex("share URL \\S+ expired"), 10s));
}

TEST_F(passthrough_test, UnknownOfflineAndNamelessVisitorsGetTheRelaysOwnPage) {
  auto relay = start_relay();
  ASSERT_NE(relay.https_port, 0);
  const std::string ca = (state_dir_ / "ca.pem").string();

  // Unknown: a 404 over TLS that the relay's CA vouches for (`burrow relay ca` prints it).
  auto printed_ca = run({BURROW_BINARY, "relay", "ca", "--state-dir", state_dir_.string()}, 10s);
  ASSERT_TRUE(printed_ca);
  EXPECT_NE(printed_ca->find("BEGIN CERTIFICATE"), std::string::npos);
  auto unknown = curl("nope.burrow.localhost", relay.https_port, {"--cacert", ca});
  ASSERT_TRUE(unknown);
  EXPECT_NE(unknown->find("no tunnel named nope"), std::string::npos) << *unknown;
  EXPECT_NE(unknown->find("status=404"), std::string::npos) << *unknown;

  // Offline: the agent is gone and its name is in its grace period.
  auto port = free_port();
  auto service = start_tls_service(port, "gone.burrow.localhost");
  std::uint16_t share_port = 0;
  auto agent = start_http_agent(relay, port, "gone", share_port);
  agent->signal(SIGKILL);
  agent->wait_exit(5s);
  ASSERT_TRUE(relay.proc->wait_for_line(std::regex("service gone: agent gone"), 5s));
  auto offline = curl("gone.burrow.localhost", relay.https_port, {"--cacert", ca});
  ASSERT_TRUE(offline);
  EXPECT_NE(offline->find("tunnel gone is offline"), std::string::npos) << *offline;
  EXPECT_NE(offline->find("status=502"), std::string::npos) << *offline;

  // No SNI at all: still an answer, never a hang.
  auto nameless = run({"/bin/sh", "-c",
                       "printf 'GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' | openssl s_client -quiet "
                       "-noservername -connect 127.0.0.1:" +
                           std::to_string(relay.https_port) + " 2>/dev/null"},
                      15s);
  ASSERT_TRUE(nameless);
  EXPECT_NE(nameless->find("no tunnel name"), std::string::npos) << *nameless;
}

// A real ClientHello for `name`, as OpenSSL's client sends it first.
std::string client_hello_for(const std::string& name) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);
  SSL_set_tlsext_host_name(ssl, name.c_str());
  SSL_set_connect_state(ssl);
  SSL_do_handshake(ssl);  // wants to read: the ClientHello is in `out`
  char* data = nullptr;
  long n = BIO_get_mem_data(out, &data);
  std::string hello(data, static_cast<std::size_t>(n));
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  return hello;
}

TEST_F(passthrough_test, ClientHelloSplitOverSegmentsIsRoutedWhole) {
  auto relay = start_relay();
  ASSERT_NE(relay.https_port, 0);
  std::string hello = client_hello_for("split.burrow.localhost");
  ASSERT_GT(hello.size(), 100u);
  // The local service records what reaches it: the visitor's bytes, untouched.
  tcp_server service(tcp_server_options{.mode = server_mode::echo, .record_prefix = hello.size()});
  std::uint16_t share_port = 0;
  auto agent = start_http_agent(relay, service.port(), "split", share_port);
  int fd = connect_tcp(share_port, 5s);
  ASSERT_GE(fd, 0);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ASSERT_TRUE(write_all(fd, hello.substr(0, 40), 5s));
  std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(write_all(fd, hello.substr(40), 5s));
  auto until = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < until &&
         (service.received_prefixes().empty() ||
          service.received_prefixes().front().size() < hello.size()))
    std::this_thread::sleep_for(20ms);
  ::close(fd);
  ASSERT_FALSE(service.received_prefixes().empty());
  EXPECT_EQ(service.received_prefixes().front(), hello);
}

// The same hello cut into two TLS records (handshake fragmentation), the second held back.
TEST_F(passthrough_test, ClientHelloSplitOverTlsRecordsIsRoutedWhole) {
  auto relay = start_relay();
  ASSERT_NE(relay.https_port, 0);
  std::string hello = client_hello_for("records.burrow.localhost");
  ASSERT_GT(hello.size(), 100u);
  std::string body = hello.substr(5);
  auto record = [&](std::string_view fragment) {
    std::string r = hello.substr(0, 3);
    r += static_cast<char>(fragment.size() >> 8);
    r += static_cast<char>(fragment.size() & 0xff);
    r += fragment;
    return r;
  };
  std::string first = record(std::string_view(body).substr(0, 30));
  std::string second = record(std::string_view(body).substr(30));
  tcp_server service(
      tcp_server_options{.mode = server_mode::echo, .record_prefix = first.size() + second.size()});
  std::uint16_t share_port = 0;
  auto agent = start_http_agent(relay, service.port(), "records", share_port);
  int fd = connect_tcp(share_port, 5s);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(write_all(fd, first, 5s));
  std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(write_all(fd, second, 5s));
  auto until = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < until &&
         (service.received_prefixes().empty() ||
          service.received_prefixes().front().size() < first.size() + second.size()))
    std::this_thread::sleep_for(20ms);
  ::close(fd);
  ASSERT_FALSE(service.received_prefixes().empty());
  EXPECT_EQ(service.received_prefixes().front(), first + second);
}

// A hello that does not fit the relay's 64 KiB bound is refused, and the relay goes on serving.
TEST_F(passthrough_test, OversizedClientHelloIsRefused) {
  auto relay = start_relay();
  ASSERT_NE(relay.https_port, 0);
  tcp_server service(tcp_server_options{.mode = server_mode::echo, .record_prefix = 16});
  std::uint16_t share_port = 0;
  auto agent = start_http_agent(relay, service.port(), "huge", share_port);
  std::string hello = client_hello_for("huge.burrow.localhost");
  // Records of 16 KiB each that only ever announce more handshake bytes to come.
  std::string body = hello.substr(5);
  std::uint32_t claimed = 0x100000;  // the handshake message says it is 1 MiB long
  body[1] = static_cast<char>(claimed >> 16);
  body[2] = static_cast<char>((claimed >> 8) & 0xff);
  body[3] = static_cast<char>(claimed & 0xff);
  body.resize(5 * 16384, 'x');
  int fd = connect_tcp(share_port, 5s);
  ASSERT_GE(fd, 0);
  for (std::size_t at = 0; at < body.size(); at += 16384) {
    std::string r = hello.substr(0, 3);
    r += static_cast<char>(0x40);
    r += static_cast<char>(0x00);
    r += body.substr(at, 16384);
    if (!write_all(fd, r, 5s)) break;  // the relay may close before it has all of it
  }
  EXPECT_TRUE(closed_by_peer(fd, 5s));
  ::close(fd);
  EXPECT_TRUE(service.received_prefixes().empty());
  auto still = curl("nope.burrow.localhost", relay.https_port,
                    {"--cacert", (state_dir_ / "ca.pem").string()});
  ASSERT_TRUE(still);
  EXPECT_NE(still->find("status=404"), std::string::npos);
}

TEST_F(passthrough_test, GarbageAndSilenceOnTheHttpsPortLeaveTheRelayServing) {
  auto relay = start_relay({"--handshake-timeout", "1s"});
  ASSERT_NE(relay.https_port, 0);
  int silent = connect_tcp(relay.https_port, 5s);
  ASSERT_GE(silent, 0);
  int garbage = connect_tcp(relay.https_port, 5s);
  ASSERT_GE(garbage, 0);
  ASSERT_TRUE(write_all(garbage, std::string(300, '\x16') + "not a hello at all", 5s));
  // Both are closed by the relay: garbage at once, silence at the handshake deadline. (Garbage
  // the relay never took off the socket turns its close into a reset.)
  EXPECT_TRUE(closed_by_peer(garbage, 5s));
  EXPECT_TRUE(closed_by_peer(silent, 5s));
  ::close(silent);
  ::close(garbage);
  auto still = curl("nope.burrow.localhost", relay.https_port,
                    {"--cacert", (state_dir_ / "ca.pem").string()});
  ASSERT_TRUE(still);
  EXPECT_NE(still->find("status=404"), std::string::npos);
}

}  // namespace
}  // namespace burrow::test
