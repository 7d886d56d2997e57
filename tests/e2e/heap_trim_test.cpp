// The heap trim (core/heap.hpp) runs in every long-lived process: after a burst of end-to-end
// visitors, the relay, the agent and `burrow connect` each look at their heaps and hand free pages
// back when a mebibyte or more is free.
#include <regex>

#include "e2e/tunnel_fixture.hpp"
#include "harness/memory.hpp"

namespace burrow::test {
namespace {

const std::regex trimmed(R"(returned the free pages of [0-9.]+ MiB of free heap)");
// Either kind of look: a release, or (at trace level) too little free to be worth one.
const std::regex looked(
    R"(returned the free pages of [0-9.]+ MiB of free heap|MiB free in the heaps, under the)");

TEST_F(tunnel_test, EveryProcessHandsABurstsFreeHeapBack) {
  if (sanitizer_allocator) GTEST_SKIP() << "a sanitizer's allocator replaces malloc's heaps";
  tcp_server echo(server_mode::echo);
  const std::vector<std::string> trace = {"--log-level", "trace"};
  auto relay = start_relay({"--log-level", "trace", "--metrics-listen", "127.0.0.1:0"});
  ASSERT_NE(relay.metrics_port, 0);
  auto agent = start_e2ee_agent(relay, echo.port(), trace);
  auto visitor = start_connect(relay, agent, trace);
  ASSERT_NE(visitor.port, 0);
  // Each visitor is a stream in all three, keyed from connect's one end-to-end session.
  EXPECT_EQ(concurrent_echoes(visitor.port, 300), 300);
  // The agent and connect each held the burst's record buffers, many mebibytes: a trim is due at
  // most every 10 s.
  const std::size_t agent_after_burst = agent.proc->line_count();
  const std::size_t visitor_after_burst = visitor.proc->line_count();
  EXPECT_TRUE(agent.proc->wait_for_line_after(agent_after_burst, trimmed, 25s)) << "agent";
  EXPECT_TRUE(visitor.proc->wait_for_line_after(visitor_after_burst, trimmed, 25s))
      << "burrow connect";
  // The relay only passes sealed frames along, and a burst may leave it under a mebibyte free.
  // Once it has let go of every visitor's stream (connect's session stream stays), its next look
  // either returns the pages or finds too few to matter.
  ASSERT_EQ(wait_for_metric(relay.metrics_port, "burrow_relay_streams", 1, 10s), 1)
      << "streams still open at the relay 10 s after the burst";
  const std::size_t relay_after_burst = relay.proc->line_count();
  const auto relay_look = relay.proc->wait_for_line_after(relay_after_burst, looked, 25s);
  EXPECT_TRUE(relay_look) << "the relay did not look at its heap after the burst";
}

}  // namespace
}  // namespace burrow::test
