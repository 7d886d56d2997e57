// ACME end to end: the agent gets its share URL's certificate from a real ACME CA (pebble), which
// validates TLS-ALPN-01 by connecting to the relay's HTTPS port; the relay routes the validation
// by SNI to the agent like any visitor, so it never holds the key or signs anything.
#include <filesystem>
#include <fstream>
#include <thread>

#include "e2e/share_url_fixture.hpp"
#include "harness/http_service.hpp"
#include "harness/pebble.hpp"

namespace burrow::test {
namespace {

TEST_F(share_url_test, AcmeCertificateValidatedThroughTheRelay) {
  if (!pebble_server::available()) GTEST_SKIP() << "pebble is not installed";
  auto relay = start_relay();
  ASSERT_NE(relay.https_port, 0);
  pebble_server pebble(dir_, relay.https_port);
  http_service service;
  std::uint16_t port = 0;
  auto agent = start_http_agent(relay, service.port(), "acme", port, "blind",
                                {"--acme", pebble.directory_url(), "--acme-ca", pebble.ca_file()});
  ASSERT_NE(port, 0) << agent->output();
  EXPECT_TRUE(agent->wait_for_line(std::regex("answered the ACME CA's validation"), 5s));
  EXPECT_TRUE(agent->wait_for_line(std::regex("got a certificate for acme.burrow.localhost from "
                                              "the ACME CA"),
                                   5s));

  // Visitors who trust the ACME CA's root reach the service; the relay signed nothing.
  auto root = pebble.root_pem();
  ASSERT_FALSE(root.empty());
  std::ofstream(dir_ / "acme-root.pem") << root;
  auto page = curl("acme.burrow.localhost", port, {"--cacert", (dir_ / "acme-root.pem").string()},
                   "/headers");
  ASSERT_TRUE(page);
  EXPECT_NE(page->find("status=200"), std::string::npos) << *page;
  EXPECT_EQ(relay.proc->output().find("signed a certificate for acme"), std::string::npos);

  // The certificate holds the agent's own key.
  auto presented = run({"/bin/sh", "-c",
                        "openssl s_client -connect 127.0.0.1:" + std::to_string(port) +
                            " -servername acme.burrow.localhost </dev/null 2>/dev/null | openssl "
                            "x509 -noout -pubkey"},
                       15s);
  auto agent_key = run({"/usr/bin/openssl", "x509", "-noout", "-pubkey", "-in",
                        (dir_ / "agent" / "e2ee.crt").string()},
                       10s);
  ASSERT_TRUE(presented && agent_key);
  EXPECT_EQ(*presented, *agent_key);

  // The visitors' line names no relay CA file (there is none), and the chain is kept.
  EXPECT_TRUE(agent->wait_for_line(std::regex("visitors who trust the ACME CA need nothing more: "
                                              "curl https://acme.burrow.localhost"),
                                   1s))
      << agent->output();
  EXPECT_EQ(agent->output().find("--cacert"), std::string::npos) << agent->output();
  auto saved = dir_ / "agent" / "acme-acme.burrow.localhost.pem";
  ASSERT_TRUE(std::filesystem::exists(saved));

  // A restarted agent serves the saved certificate at once and orders none.
  agent->signal(SIGTERM);
  ASSERT_EQ(agent->wait_exit(15s), 0) << agent->output();
  auto again = start_http_agent(relay, service.port(), "acme", port, "blind",
                                {"--acme", pebble.directory_url(), "--acme-ca", pebble.ca_file()});
  ASSERT_NE(port, 0) << again->output();
  EXPECT_TRUE(again->wait_for_line(
      std::regex("using the certificate for acme.burrow.localhost saved in .*acme-acme"), 1s))
      << again->output();
  auto page_again = curl("acme.burrow.localhost", port,
                         {"--cacert", (dir_ / "acme-root.pem").string()}, "/headers");
  ASSERT_TRUE(page_again);
  EXPECT_NE(page_again->find("status=200"), std::string::npos) << *page_again;
  EXPECT_EQ(again->output().find("for a certificate"), std::string::npos) << again->output();
}

// Renewal comes from the agent's once-a-second upkeep, not from a registration: with 12 s
// certificates, a second one after about 8 s.
TEST_F(share_url_test, AcmeCertificateIsRenewed) {
  if (!pebble_server::available()) GTEST_SKIP() << "pebble is not installed";
  auto relay = start_relay();
  pebble_server pebble(dir_, relay.https_port, std::chrono::seconds(12));
  http_service service;
  std::uint16_t port = 0;
  auto agent = start_http_agent(relay, service.port(), "renew", port, "blind",
                                {"--acme", pebble.directory_url(), "--acme-ca", pebble.ca_file()});
  ASSERT_NE(port, 0) << agent->output();
  ASSERT_TRUE(agent->wait_for_line(
      std::regex("renewed the certificate for renew.burrow.localhost from the ACME CA"), 20s))
      << agent->output();
  std::this_thread::sleep_for(5s);  // the first certificate has expired by now
  auto root = pebble.root_pem();
  std::ofstream(dir_ / "acme-root.pem") << root;
  auto page = curl("renew.burrow.localhost", port, {"--cacert", (dir_ / "acme-root.pem").string()},
                   "/headers");
  ASSERT_TRUE(page);
  EXPECT_NE(page->find("status=200"), std::string::npos) << *page;
}

}  // namespace
}  // namespace burrow::test
