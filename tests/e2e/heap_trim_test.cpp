// The heap trim (core/heap.hpp) runs in every long-lived process: after a burst of end-to-end
// visitors, the relay, the agent and `burrow connect` each hand free heap pages back and log it.
#include <regex>

#include "e2e/tunnel_fixture.hpp"
#include "harness/memory.hpp"

namespace burrow::test {
namespace {

TEST_F(tunnel_test, EveryProcessHandsABurstsFreeHeapBack) {
  if (sanitizer_allocator) GTEST_SKIP() << "a sanitizer's allocator replaces malloc's heaps";
  tcp_server echo(server_mode::echo);
  const std::vector<std::string> debug = {"--log-level", "debug"};
  auto relay = start_relay(debug);
  auto agent = start_e2ee_agent(relay, echo.port(), debug);
  auto visitor = start_connect(relay, agent, debug);
  ASSERT_NE(visitor.port, 0);
  // Each visitor is a TLS session between connect and the agent, and a stream in all three.
  EXPECT_EQ(concurrent_echoes(visitor.port, 300), 300);
  // A trim is due at most every 10 s, when a mebibyte or more is free.
  const std::regex trimmed(R"(returned the free pages of [0-9.]+ MiB of free heap)");
  EXPECT_TRUE(relay.proc->wait_for_line(trimmed, 25s)) << "relay";
  EXPECT_TRUE(agent.proc->wait_for_line(trimmed, 25s)) << "agent";
  EXPECT_TRUE(visitor.proc->wait_for_line(trimmed, 25s)) << "burrow connect";
}

}  // namespace
}  // namespace burrow::test
