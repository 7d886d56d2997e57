// Blind share URLs end to end: TLS ends at the agent with a certificate the relay's CA signed
// from the agent's own request (or the user's own), and the agent speaks HTTP to the service.
#include <signal.h>

#include <fstream>
#include <thread>

#include "e2e/share_url_fixture.hpp"
#include "tls/certs.hpp"
#include "tls/cipher_order.hpp"

namespace burrow::test {
namespace {

class blind_test : public share_url_test {
 protected:
  // python3's http.server on loopback, serving dir_/www.
  std::unique_ptr<child_process> start_file_service(std::uint16_t port) {
    std::filesystem::create_directories(dir_ / "www");
    std::ofstream(dir_ / "www" / "index.html") << "<p>blind marker 5f3a</p>\n";
    auto p = child_process::start(
        "http.server", {"/usr/bin/python3", "-u", "-m", "http.server", "--bind", "127.0.0.1",
                        "--directory", (dir_ / "www").string(), std::to_string(port)});
    EXPECT_TRUE(p->wait_for_line(std::regex("Serving HTTP"), 10s)) << p->output();
    return p;
  }
  std::string agent_ca() const { return (dir_ / "agent" / "relay-ca.pem").string(); }
};

TEST_F(blind_test, TlsEndsAtTheAgentWithACertificateTheRelaysCaSignedForItsKey) {
  auto relay = start_relay();
  auto port = free_port();
  auto service = start_file_service(port);
  std::uint16_t share_port = 0;
  auto agent = start_http_agent(relay, port, "web", share_port, "blind");
  ASSERT_NE(share_port, 0);

  // Visitors trust the relay's CA: as `burrow relay ca` prints it, and as the agent saved it.
  auto printed = run({BURROW_BINARY, "relay", "ca", "--state-dir", state_dir_.string()}, 10s);
  ASSERT_TRUE(printed);
  std::ofstream(dir_ / "printed-ca.pem") << *printed;
  for (const auto& ca : {agent_ca(), (dir_ / "printed-ca.pem").string()}) {
    auto page = curl("web.burrow.localhost", share_port, {"--cacert", ca});
    ASSERT_TRUE(page) << ca;
    EXPECT_NE(page->find("blind marker 5f3a"), std::string::npos) << *page;
    EXPECT_NE(page->find("status=200"), std::string::npos) << *page;
  }

  // The certificate names the share URL and holds the agent's own public key.
  auto presented = run({"/bin/sh", "-c",
                        "openssl s_client -connect 127.0.0.1:" + std::to_string(share_port) +
                            " -servername web.burrow.localhost </dev/null 2>/dev/null | openssl "
                            "x509 -noout -ext subjectAltName -pubkey"},
                       15s);
  ASSERT_TRUE(presented);
  EXPECT_NE(presented->find("DNS:web.burrow.localhost"), std::string::npos) << *presented;
  auto agent_key = run({"/usr/bin/openssl", "x509", "-noout", "-pubkey", "-in",
                        (dir_ / "agent" / "e2ee.crt").string()},
                       10s);
  ASSERT_TRUE(agent_key);
  EXPECT_NE(presented->find(agent_key->substr(0, agent_key->size() - 1)), std::string::npos)
      << *presented << *agent_key;
  // The relay logs the signing, never a key.
  EXPECT_TRUE(relay.proc->wait_for_line(std::regex("signed a certificate for web"), 5s));
  EXPECT_EQ(relay.proc->output().find("PRIVATE KEY"), std::string::npos);
}

// A visitor whose CPU has no AES instructions leads with ChaCha20-Poly1305 and gets it, on
// TLS 1.3 and on TLS 1.2; one that leads with AES-GCM gets the agent's own first choice.
TEST_F(blind_test, AVisitorLeadingWithChaCha20GetsIt) {
  auto relay = start_relay();
  std::uint16_t share_port = 0;
  auto agent = start_http_agent(relay, free_port(), "suites", share_port, "blind");
  ASSERT_NE(share_port, 0);
  auto cipher_for = [&](const std::string& offer) {
    return run({"/bin/sh", "-c",
                "openssl s_client -connect 127.0.0.1:" + std::to_string(share_port) +
                    " -servername suites.burrow.localhost " + offer +
                    " </dev/null 2>/dev/null | grep -E '^(New|    Cipher)'"},
               15s);
  };
  auto tls13 =
      cipher_for("-tls1_3 -ciphersuites TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256");
  ASSERT_TRUE(tls13);
  EXPECT_NE(tls13->find("TLS_CHACHA20_POLY1305_SHA256"), std::string::npos) << *tls13;
  auto tls12 = cipher_for(
      "-tls1_2 -cipher ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256:"
      "ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-GCM-SHA256");
  ASSERT_TRUE(tls12);
  EXPECT_NE(tls12->find("CHACHA20-POLY1305"), std::string::npos) << *tls12;
  auto aes_first =
      cipher_for("-tls1_3 -ciphersuites TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256");
  ASSERT_TRUE(aes_first);
  const std::string own_first = tls::preferred_aead_order() == tls::aead_order::aes_gcm_first
                                    ? "Cipher is TLS_AES_128_GCM_SHA256"
                                    : "Cipher is TLS_CHACHA20_POLY1305_SHA256";
  EXPECT_NE(aes_first->find(own_first), std::string::npos) << *aes_first;
}

TEST_F(blind_test, ALocalServiceThatIsDownGetsA502FromTheAgent) {
  auto relay = start_relay();
  std::uint16_t share_port = 0;
  auto agent = start_http_agent(relay, free_port(), "down", share_port, "blind");
  auto page = curl("down.burrow.localhost", share_port, {"--cacert", agent_ca()});
  ASSERT_TRUE(page);
  EXPECT_NE(page->find("status=502"), std::string::npos) << *page;
  EXPECT_NE(page->find("not answering"), std::string::npos) << *page;
}

// wrk's way of ending a connection: read the answer, send close_notify, close at once, so the
// relay gets the last bytes and a reset together. The relay's read of those bytes once called
// the socket empty and waited for good: each such visitor kept a stream, a socket and the
// agent's connection to the service open until the relay stopped.
TEST_F(blind_test, VisitorsThatSendCloseNotifyAndResetLeaveNothingOpen) {
  auto relay = start_relay({"--metrics-listen", "127.0.0.1:0"});
  auto port = free_port();
  auto service = start_file_service(port);
  std::uint16_t share_port = 0;
  auto agent = start_http_agent(relay, port, "web", share_port, "blind");
  ASSERT_NE(share_port, 0);
  const char* visitors = R"(
import socket, ssl, struct, sys
ctx = ssl.create_default_context(cafile=sys.argv[2])
done = 0
for i in range(40):
    raw = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
    s = ctx.wrap_socket(raw, server_hostname="web.burrow.localhost")
    s.sendall(b"GET / HTTP/1.1\r\nHost: web.burrow.localhost\r\nConnection: close\r\n\r\n")
    data = b""
    while b"blind marker 5f3a" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    done += b"blind marker 5f3a" in data
    s.setblocking(False)
    try:
        s.unwrap()  # close_notify out; the agent's is not waited for
    except (ssl.SSLWantReadError, ssl.SSLError, OSError):
        pass
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
print("answered", done)
)";
  auto python = child_process::start(
      "visitors", {"/usr/bin/python3", "-c", visitors, std::to_string(share_port), agent_ca()});
  ASSERT_TRUE(python);
  ASSERT_EQ(python->wait_exit(60s), 0) << python->output();
  EXPECT_NE(python->output().find("answered 40"), std::string::npos) << python->output();
  EXPECT_EQ(wait_for_metric(relay.metrics_port, "burrow_relay_streams", 0, 5s), 0)
      << "visitor streams still open 5 s after the last visitor left";
}

TEST_F(blind_test, TheCertificateIsRenewedBeforeItExpires) {
  auto relay = start_relay({"--share-cert-lifetime", "12s"});
  auto port = free_port();
  auto service = start_file_service(port);
  std::uint16_t share_port = 0;
  auto agent = start_http_agent(relay, port, "renew", share_port, "blind");
  // Two thirds of 12 s: a new certificate after about 8 s, and another after 16 s.
  ASSERT_TRUE(agent->wait_for_line(std::regex("renewed the certificate for renew"), 15s))
      << agent->output();
  std::this_thread::sleep_for(7s);  // the first certificate has expired by now
  auto page = curl("renew.burrow.localhost", share_port, {"--cacert", agent_ca()});
  ASSERT_TRUE(page);
  EXPECT_NE(page->find("status=200"), std::string::npos) << *page;
}

TEST_F(blind_test, TheUsersOwnCertificateIsPresented) {
  auto relay = start_relay();
  auto pair = tls::make_self_signed("mine", {"own.burrow.localhost"}, std::chrono::hours(24));
  std::ofstream(dir_ / "own.crt") << pair.cert_pem;
  std::ofstream(dir_ / "own.key") << pair.key_pem;
  auto port = free_port();
  auto service = start_file_service(port);
  std::uint16_t share_port = 0;
  auto agent = start_http_agent(
      relay, port, "own", share_port, "blind",
      {"--cert", (dir_ / "own.crt").string(), "--key", (dir_ / "own.key").string()});
  auto page = curl("own.burrow.localhost", share_port, {"--cacert", (dir_ / "own.crt").string()});
  ASSERT_TRUE(page);
  EXPECT_NE(page->find("blind marker 5f3a"), std::string::npos) << *page;
  EXPECT_EQ(relay.proc->output().find("signed a certificate for own"), std::string::npos);

  // A key that does not belong to the certificate is an error before anything starts.
  auto other = tls::make_self_signed("other", {"x"}, std::chrono::hours(24));
  std::ofstream(dir_ / "other.key") << other.key_pem;
  auto bad =
      child_process::start("agent",
                           {BURROW_BINARY, "http", std::to_string(port), "--relay",
                            "127.0.0.1:" + std::to_string(relay.agent_port), "--relay-pin",
                            relay.fingerprint, "--state-dir", (dir_ / "agent").string(), "--cert",
                            (dir_ / "own.crt").string(), "--key", (dir_ / "other.key").string()},
                           {{"BURROW_TOKEN", relay.token}});
  EXPECT_EQ(bad->wait_exit(10s), 1);
  EXPECT_NE(bad->output().find("does not belong to the certificate"), std::string::npos)
      << bad->output();
}

TEST_F(blind_test, PlainHttpIsRedirectedToHttpsUnlessTheServiceAsksForIt) {
  auto relay = start_relay();
  ASSERT_NE(relay.http_port, 0);
  auto port = free_port();
  auto service = start_file_service(port);
  std::uint16_t share_port = 0;
  auto agent = start_http_agent(relay, port, "web", share_port, "blind");
  std::uint16_t clear_port = 0;
  auto clear = start_http_agent(relay, port, "clear", clear_port, "blind", {"--plain-http"});
  auto plain = [&](const std::string& host, std::vector<std::string> extra) {
    std::vector<std::string> argv{"/usr/bin/curl",
                                  "-sS",
                                  "--max-time",
                                  "10",
                                  "-i",
                                  "--resolve",
                                  host + ":" + std::to_string(relay.http_port) + ":127.0.0.1",
                                  "--resolve",
                                  host + ":" + std::to_string(share_port) + ":127.0.0.1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back("http://" + host + ":" + std::to_string(relay.http_port) + "/a/b?c=d");
    return run(argv, 15s);
  };
  // Redirected, path and query kept; following it lands on the HTTPS URL.
  auto redirect = plain("web.burrow.localhost", {});
  ASSERT_TRUE(redirect);
  EXPECT_NE(redirect->find("308 Permanent Redirect"), std::string::npos) << *redirect;
  EXPECT_NE(redirect->find("Location: https://web.burrow.localhost:" + std::to_string(share_port) +
                           "/a/b?c=d"),
            std::string::npos)
      << *redirect;
  // Asked for: served in the clear (python answers 404 for the path: it got the request).
  auto served = plain("clear.burrow.localhost", {});
  ASSERT_TRUE(served);
  EXPECT_NE(served->find("HTTP/1.0 404 File not found"), std::string::npos) << *served;
  auto index =
      run({"/usr/bin/curl", "-sS", "--max-time", "10", "-H", "Host: clear.burrow.localhost",
           "http://127.0.0.1:" + std::to_string(relay.http_port) + "/"},
          15s);
  ASSERT_TRUE(index);
  EXPECT_NE(index->find("blind marker 5f3a"), std::string::npos) << *index;
  // Unknown names and requests that are not HTTP get an answer too.
  auto unknown = plain("nope.burrow.localhost", {});
  ASSERT_TRUE(unknown);
  EXPECT_NE(unknown->find("404"), std::string::npos);
  EXPECT_NE(unknown->find("no tunnel named nope"), std::string::npos) << *unknown;
}

}  // namespace
}  // namespace burrow::test
