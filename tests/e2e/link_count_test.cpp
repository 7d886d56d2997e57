// How many links an agent and `burrow connect` keep, and on how many threads, when they may run
// on one CPU only: real processes started with the test thread narrowed to one CPU (a child
// inherits its parent thread's affinity mask, as under taskset).
#include "e2e/tunnel_fixture.hpp"
#include "harness/affinity.hpp"

namespace burrow::test {
namespace {

TEST_F(tunnel_test, OnOneCpuAgentAndConnectKeepOneLinkEach) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay({"--metrics-listen", "127.0.0.1:0"});
  ASSERT_NE(relay.metrics_port, 0);
  e2ee_agent_process agent;
  connect_process visitor;
  {
    one_cpu_scope pinned;
    ASSERT_TRUE(pinned.narrowed());
    agent = start_e2ee_agent(relay, echo.port());
    visitor = start_connect(relay, agent);
  }
  ASSERT_NE(visitor.port, 0);
  auto plan = std::regex(R"(keeping 1 link to relay 127\.0\.0\.1:\d+ on 1 thread$)");
  EXPECT_TRUE(agent.proc->wait_for_line(plan, 5s)) << agent.proc->output();
  EXPECT_TRUE(visitor.proc->wait_for_line(plan, 5s)) << visitor.proc->output();
  EXPECT_EQ(exchange(visitor.port, "one cpu, one link"), "one cpu, one link");
  EXPECT_EQ(concurrent_echoes(visitor.port, 50), 50);
  // One link from the agent and one from `burrow connect`, no more.
  EXPECT_EQ(metric_value(fetch_metrics(relay.metrics_port), "burrow_relay_links"), 2);
  EXPECT_EQ(agent.proc->output().find("link 1 "), std::string::npos) << agent.proc->output();
}

TEST_F(tunnel_test, OnOneCpuLinksAskedForShareOneThreadAndAllCarryStreams) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  agent_process agent;
  {
    one_cpu_scope pinned;
    ASSERT_TRUE(pinned.narrowed());
    agent = start_agent(relay, echo.port(), {"--links", "3"});
  }
  ASSERT_NE(agent.public_port, 0);
  EXPECT_TRUE(agent.proc->wait_for_line(
      std::regex(R"(keeping 3 links to relay 127\.0\.0\.1:\d+ on 1 thread$)"), 5s))
      << agent.proc->output();
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(agent.proc->wait_for_line(
        std::regex("link " + std::to_string(i) + " connected to relay"), 10s))
        << agent.proc->output();
  // The relay takes the agent's registered links in turn; every stream on every one answers.
  EXPECT_EQ(concurrent_echoes(agent.public_port, 60), 60);
  check_bystander(agent.public_port);
}

}  // namespace
}  // namespace burrow::test
