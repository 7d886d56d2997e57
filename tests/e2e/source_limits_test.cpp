// Per-source limits on every listener, end to end: a flood from 127.0.0.2 is refused at accept,
// counted and logged, while visitors from 127.0.0.1 go on untouched.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <thread>

#include "e2e/tunnel_fixture.hpp"
#include "harness/hostile.hpp"

namespace burrow::test {
namespace {

std::string series(const char* listener, const char* limit) {
  return std::string("burrow_relay_connections_refused_total{listener=\"") + listener +
         "\",limit=\"" + limit + "\"}";
}

TEST_F(tunnel_test, OpenConnectionsPerSourceAreCappedOnEveryListener) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay(
      {"--source-connections", "20", "--source-rate", "0", "--metrics-listen", "127.0.0.1:0"});
  ASSERT_NE(relay.metrics_port, 0);
  auto agent = start_agent(relay, echo.port());
  ASSERT_NE(agent.public_port, 0);

  // 127.0.0.2 holds 20 connections on the public port; the next ones are reset at accept.
  std::vector<int> held;
  int refused = 0;
  for (int i = 0; i < 40; ++i) {
    // A reset can arrive before connect() reports success: that is a refusal too.
    int fd = connect_tcp(agent.public_port, 5s, "127.0.0.1", "127.0.0.2");
    if (fd < 0)
      ++refused;
    else
      held.push_back(fd);
  }
  std::this_thread::sleep_for(300ms);
  for (int fd : held) refused += closed_by_peer(fd, 1ms);
  EXPECT_EQ(refused, 20);
  // Its 20 open connections count on every listener: the agent port, HTTPS and HTTP refuse it.
  for (auto port : {relay.agent_port, relay.https_port, relay.http_port}) {
    int fd = connect_tcp(port, 5s, "127.0.0.1", "127.0.0.2");
    EXPECT_TRUE(fd < 0 || closed_by_peer(fd, 2s)) << port;
    if (fd >= 0) ::close(fd);
  }
  // Another address is untouched: 1 MiB through the tunnel, checked.
  auto payload = deterministic_bytes(1 << 20, 5);
  auto reply = exchange(agent.public_port, payload, 20s);
  ASSERT_TRUE(reply);
  EXPECT_EQ(sha256_hex(*reply), sha256_hex(payload));

  auto text = fetch_metrics(relay.metrics_port);
  EXPECT_GE(metric_value(text, series("port", "source-connections")), 20) << text;
  EXPECT_EQ(metric_value(text, series("agent", "source-connections")), 1);
  EXPECT_EQ(metric_value(text, series("https", "source-connections")), 1);
  EXPECT_EQ(metric_value(text, series("http", "source-connections")), 1);
  EXPECT_TRUE(relay.proc->wait_for_line(
      std::regex(R"(public port: refused a connection from 127\.0\.0\.2: too many open)"), 5s));

  // Once the flood lets go, the address is welcome again: as soon as the relay has seen its
  // connections end, which takes a round trip through the agent for each of them.
  for (int fd : held) ::close(fd);
  auto back = exchange_until_echoed(agent.public_port, "back again", 10s);
  EXPECT_EQ(back, "back again");
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  bool welcome = false;
  while (!welcome && std::chrono::steady_clock::now() < deadline) {
    int fd = connect_tcp(agent.public_port, 5s, "127.0.0.1", "127.0.0.2");
    if (fd >= 0) {
      std::this_thread::sleep_for(200ms);
      welcome = !closed_by_peer(fd, 300ms);
      ::close(fd);
    }
    if (!welcome) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(welcome) << "127.0.0.2 is still refused 10 s after its connections closed";
}

TEST_F(tunnel_test, NewConnectionsPerSecondAreLimitedWithABurstAndRefill) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay({"--source-connections", "0", "--source-rate", "5", "--source-burst",
                            "10", "--metrics-listen", "127.0.0.1:0"});
  ASSERT_NE(relay.metrics_port, 0);
  auto agent = start_agent(relay, echo.port());
  ASSERT_NE(agent.public_port, 0);

  // 30 connections at once from 127.0.0.2 to the HTTPS listener: the burst of 10 gets through
  // (and waits for a ClientHello), about 20 are reset.
  int refused = flood(relay.https_port, "127.0.0.2", 30).refused;
  EXPECT_GE(refused, 18);
  EXPECT_LE(refused, 20);
  // 127.0.0.1 is not slowed down by 127.0.0.2's flood.
  EXPECT_EQ(exchange(agent.public_port, "unaffected"), "unaffected");
  auto text = fetch_metrics(relay.metrics_port);
  EXPECT_EQ(metric_value(text, series("https", "source-rate")), refused) << text;
  EXPECT_TRUE(relay.proc->wait_for_line(
      std::regex(
          R"(HTTPS listener: refused a connection from 127\.0\.0\.2: new connections too fast)"),
      5s));
  // The bucket refills at 5 a second.
  std::this_thread::sleep_for(1500ms);
  int fd = connect_tcp(relay.https_port, 5s, "127.0.0.1", "127.0.0.2");
  ASSERT_GE(fd, 0);
  EXPECT_FALSE(closed_by_peer(fd, 300ms));
  ::close(fd);
}

TEST_F(tunnel_test, SighupAppliesNewSourceLimitsToTheRunningRelay) {
  tcp_server echo(server_mode::echo);
  auto config = dir_ / "relay.toml";
  { std::ofstream(config) << "source-connections = 100\nsource-rate = 0\n"; }
  auto relay = start_relay({"-c", config.string(), "--metrics-listen", "127.0.0.1:0"});
  auto agent = start_agent(relay, echo.port());
  ASSERT_NE(agent.public_port, 0);
  EXPECT_EQ(flood(agent.public_port, "127.0.0.2", 10).refused, 0);

  // Wait until the relay has seen those close, so only the next flood counts.
  wait_for_metric(relay.metrics_port, "burrow_relay_streams", 0, 5s);
  auto lines = relay.proc->line_count();
  { std::ofstream(config) << "source-connections = 4\nsource-rate = 0\n"; }
  relay.proc->signal(SIGHUP);
  ASSERT_TRUE(relay.proc->wait_for_line_after(lines, std::regex("configuration reloaded"), 5s));
  auto r = flood(agent.public_port, "127.0.0.2", 10);
  EXPECT_EQ(r.admitted, 4) << fetch_metrics(relay.metrics_port);
  EXPECT_EQ(r.refused, 6);
  // The tunnel itself was not dropped by the reload.
  check_bystander(agent.public_port);
}

TEST_F(tunnel_test, DefaultLimitsLetAThousandConnectionsFromOneAddressThrough) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay({"--metrics-listen", "127.0.0.1:0"});
  auto agent = start_agent(relay, echo.port());
  ASSERT_NE(agent.public_port, 0);
  EXPECT_EQ(concurrent_echoes(agent.public_port, 1000), 1000);
  auto text = fetch_metrics(relay.metrics_port);
  EXPECT_EQ(metric_value(text, series("port", "source-connections")), 0) << text;
  EXPECT_EQ(metric_value(text, series("port", "source-rate")), 0);
  EXPECT_GE(metric_value(text, "burrow_relay_connections_accepted_total{listener=\"port\"}"), 1000);
}

}  // namespace
}  // namespace burrow::test
