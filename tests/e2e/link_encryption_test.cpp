// --link-encryption none end to end: the relay must allow it, both ends say so loudly, tunnels
// (plain and end to end) carry their bytes intact over the unencrypted link, and a relay that
// allows it still serves encrypted agents. What crosses the wire is checked in capture_test.
#include <thread>

#include "e2e/tunnel_fixture.hpp"

namespace burrow::test {
namespace {

class link_encryption_test : public tunnel_test {
 protected:
  relay_process start_open_relay() {
    return start_relay({"--link-encryption", "none", "--metrics-listen", "127.0.0.1:0"});
  }
  static bool logged(child_process& p, const std::string& re) {
    return p.wait_for_line(std::regex(re), 5s).has_value();
  }
  static constexpr const char* warning = "link-encryption none: .*UNENCRYPTED";
};

TEST_F(link_encryption_test, UnencryptedLinksCarryTunnelsIntact) {
  tcp_server echo(server_mode::echo);
  auto relay = start_open_relay();
  ASSERT_NE(relay.agent_port, 0);
  EXPECT_TRUE(logged(*relay.proc, warning)) << relay.proc->output();
  // Two links whatever CPUs the test may use (one CPU would make one link the default).
  auto agent = start_agent(relay, echo.port(), {"--link-encryption", "none", "--links", "2"});
  ASSERT_NE(agent.public_port, 0);
  EXPECT_TRUE(logged(*agent.proc, warning)) << agent.proc->output();
  // Each of the agent's two links says it runs without encryption.
  EXPECT_TRUE(logged(*relay.proc, R"(link 0: link without encryption)")) << relay.proc->output();
  EXPECT_TRUE(logged(*relay.proc, R"(link 1: link without encryption)")) << relay.proc->output();

  check_bystander(agent.public_port);
  EXPECT_EQ(concurrent_echoes(agent.public_port, 200), 200);
  // A download and an upload at once, both directions of the unencrypted link busy.
  std::string up = deterministic_bytes(8u << 20, 4), down;
  std::optional<std::string> a, b;
  std::thread t1([&] { a = exchange(agent.public_port, up, 30s); });
  std::thread t2([&] { b = exchange(agent.public_port, up.substr(0, 1u << 20), 30s); });
  t1.join();
  t2.join();
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  EXPECT_EQ(sha256_hex(*a), sha256_hex(up));
  EXPECT_EQ(sha256_hex(*b), sha256_hex(up.substr(0, 1u << 20)));
}

TEST_F(link_encryption_test, ARelayRefusesUnencryptedLinksUnlessAllowed) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay({"--metrics-listen", "127.0.0.1:0"});
  ASSERT_NE(relay.agent_port, 0);
  auto agent = spawn_agent(relay, std::to_string(echo.port()), {"--link-encryption", "none"});
  // Retrying cannot help: the agent stops with a message that says what to change.
  auto code = agent->wait_exit(10s);
  ASSERT_TRUE(code) << agent->output();
  EXPECT_NE(*code, 0);
  EXPECT_NE(agent->output().find("the relay refused an unencrypted link"), std::string::npos)
      << agent->output();
  EXPECT_NE(agent->output().find("--link-encryption none to allow it"), std::string::npos);
  EXPECT_TRUE(logged(*relay.proc, R"(rejected \(link_encryption\): this relay only runs )"
                                  R"(encrypted links)"))
      << relay.proc->output();
  // Each of the agent's two link slots may have dialled before it stopped.
  auto refused =
      metric_value(fetch_metrics(relay.metrics_port),
                   R"(burrow_relay_rejected_total{listener="agent",reason="link_encryption"})");
  EXPECT_GE(refused, 1);
  EXPECT_LE(refused, 2);
  // Nothing was weakened for anyone else: an ordinary agent still gets its encrypted tunnel.
  auto ordinary = start_agent(relay, echo.port(), {"--name", "ordinary"});
  ASSERT_NE(ordinary.public_port, 0);
  check_bystander(ordinary.public_port);
  EXPECT_EQ(relay.proc->output().find("link without encryption"), std::string::npos);
}

TEST_F(link_encryption_test, AnAllowingRelayKeepsEncryptedAgentsEncrypted) {
  tcp_server echo(server_mode::echo);
  auto relay = start_open_relay();
  auto agent = start_agent(relay, echo.port());
  ASSERT_NE(agent.public_port, 0);
  check_bystander(agent.public_port);
  EXPECT_EQ(relay.proc->output().find("link without encryption"), std::string::npos)
      << relay.proc->output();
  EXPECT_EQ(agent.proc->output().find("UNENCRYPTED"), std::string::npos);
}

TEST_F(link_encryption_test, EndToEndTunnelsRunOverUnencryptedLinks) {
  tcp_server echo(server_mode::echo);
  auto relay = start_open_relay();
  auto agent = start_e2ee_agent(relay, echo.port(), {"--link-encryption", "none"});
  ASSERT_FALSE(agent.service.empty());
  auto visitor = start_connect(relay, agent, {"--link-encryption", "none"});
  ASSERT_NE(visitor.port, 0);
  EXPECT_TRUE(logged(*visitor.proc, "streams stay encrypted between you and the agent"))
      << visitor.proc->output();
  EXPECT_TRUE(logged(*relay.proc, R"(visitor 127\.0\.0\.1:\d+ session \w+ link \d+: link )"
                                  R"(without encryption)"))
      << relay.proc->output();
  check_bystander(visitor.port);
}

// Encrypted links (tls, the default, and full) protect their records themselves after the
// welcome, with keys from the TLS session's exporter; both ends say so, and tunnels carry their
// bytes intact. (capture_test opens these records with the relay's logged keys.)
TEST_F(link_encryption_test, EncryptedLinksRunOnTheirOwnRecords) {
  tcp_server echo(server_mode::echo);
  for (const char* mode : {"tls", "full"}) {
    auto relay = start_relay({"--link-encryption", mode});
    ASSERT_NE(relay.agent_port, 0);
    auto agent = start_agent(relay, echo.port(), {"--links", "2"});
    ASSERT_NE(agent.public_port, 0);
    EXPECT_TRUE(logged(*relay.proc, R"(link 1 connected \(burrow/.*, own TLS 1\.3 records\))"))
        << mode << "\n"
        << relay.proc->output();
    EXPECT_TRUE(logged(*agent.proc, R"(link 1 connected to relay .* \(own TLS 1\.3 records\))"))
        << mode << "\n"
        << agent.proc->output();
    EXPECT_EQ(concurrent_echoes(agent.public_port, 100), 100);
    const std::string up = deterministic_bytes(4u << 20, 5);
    auto back = exchange(agent.public_port, up, 30s);
    ASSERT_TRUE(back) << mode;
    EXPECT_EQ(sha256_hex(*back), sha256_hex(up)) << mode;
  }
}

TEST_F(link_encryption_test, ABadValueIsAClearError) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto agent = spawn_agent(relay, std::to_string(echo.port()), {"--link-encryption", "off"});
  auto code = agent->wait_exit(10s);
  ASSERT_TRUE(code);
  EXPECT_NE(*code, 0);
  EXPECT_NE(
      agent->output().find("invalid value 'off' for --link-encryption: expected tls, full or none"),
      std::string::npos)
      << agent->output();
}

}  // namespace
}  // namespace burrow::test
