// Hostile input on the agent port: random bytes, truncated TLS, a valid TLS session that sends
// garbage frames, oversized frames and streams opened where they may not be. The relay stays up,
// another tunnel's transfer completes intact, and the log says what happened.
#include <sys/socket.h>
#include <unistd.h>

#include "e2e/tunnel_fixture.hpp"
#include "harness/hostile.hpp"
#include "proto/control.hpp"
#include "proto/frame.hpp"

namespace burrow::test {
namespace {

using hostile_test = tunnel_test;

TEST_F(hostile_test, RandomBytesAndTruncatedTlsOnTheAgentPort) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay({"--handshake-timeout", "1s"});
  auto agent = start_agent(relay, echo.port());
  ASSERT_NE(agent.public_port, 0);
  for (int i = 0; i < 20; ++i)
    send_and_close(relay.agent_port, deterministic_bytes(100 + i * 97, i));
  // The start of a real ClientHello, cut off.
  send_and_close(relay.agent_port, std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11));
  // A peer that connects and says nothing is cut off by the handshake deadline.
  int silent = connect_tcp(relay.agent_port, 5s);
  ASSERT_GE(silent, 0);
  auto gone = read_until_eof(silent, 5s, 1024);
  ::close(silent);
  EXPECT_TRUE(gone.has_value());
  check_bystander(agent.public_port);
  EXPECT_TRUE(relay.proc->wait_for_line(std::regex("TLS handshake (failed|timed out)"), 5s));
  EXPECT_TRUE(relay.proc->running());
}

TEST_F(hostile_test, GarbageFramesOversizedFramesAndForbiddenStreams) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto agent = start_agent(relay, echo.port());
  ASSERT_NE(agent.public_port, 0);

  {  // An agent may not open streams on the relay: the open is refused, the link lives on.
    rogue_agent rogue(relay.agent_port, relay.token);
    ASSERT_TRUE(rogue.welcomed());
    proto::open_metadata meta{"anything", "1.2.3.4", 1, "127.0.0.1", 2, ""};
    rogue.send(frame(proto::frame_type::open, 0, 1, proto::encode_open(meta)));
    rogue.send(frame(proto::frame_type::data, 0, 1, "data for a refused stream"));
    rogue.send(frame(proto::frame_type::data, 0, 99, "data for a stream never opened"));
    rogue.send(frame(proto::frame_type::window, 0, 77, std::string(4, '\x01')));
    // Reusing an id is a protocol error that ends the link.
    rogue.send(frame(proto::frame_type::open, 0, 1, proto::encode_open(meta)));
    EXPECT_TRUE(rogue.wait_closed(5s));
  }
  EXPECT_TRUE(relay.proc->wait_for_line(std::regex("stream id 1 may not be opened"), 5s));
  {  // Random bytes inside TLS.
    rogue_agent rogue(relay.agent_port, relay.token);
    ASSERT_TRUE(rogue.welcomed());
    rogue.send(deterministic_bytes(5000, 4));
    EXPECT_TRUE(rogue.wait_closed(5s));
  }
  {  // A frame larger than the link allows.
    rogue_agent rogue(relay.agent_port, relay.token);
    ASSERT_TRUE(rogue.welcomed());
    std::string head(proto::frame_header_size, '\0');
    proto::encode_header({1u << 23, proto::frame_type::data, 0, 1},
                         std::span<std::uint8_t, proto::frame_header_size>(
                             reinterpret_cast<std::uint8_t*>(head.data()), head.size()));
    rogue.send(head);
    EXPECT_TRUE(rogue.wait_closed(5s));
  }
  EXPECT_TRUE(relay.proc->wait_for_line(std::regex("protocol error: frame too large"), 5s));
  {  // Control messages that do not parse.
    rogue_agent rogue(relay.agent_port, relay.token);
    ASSERT_TRUE(rogue.welcomed());
    rogue.send(frame(proto::frame_type::control, 0, 0, "{not json"));
    EXPECT_TRUE(rogue.wait_closed(5s));
  }
  EXPECT_TRUE(relay.proc->wait_for_line(std::regex("protocol error: control message"), 5s));
  check_bystander(agent.public_port);
  EXPECT_TRUE(relay.proc->running());
}

TEST_F(hostile_test, PingFloodFromAPeerThatNeverReadsIsCutOff) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto agent = start_agent(relay, echo.port());
  ASSERT_NE(agent.public_port, 0);
  {
    rogue_agent rogue(relay.agent_port, relay.token);
    ASSERT_TRUE(rogue.welcomed());
    // 3 million pings whose pongs are never read: more than the relay will queue for anyone.
    std::string ping = frame(proto::frame_type::ping, 0, 0, std::string(8, 'p'));
    std::string burst;
    for (int i = 0; i < 10000; ++i) burst += ping;
    for (int i = 0; i < 300; ++i) rogue.send(burst);
    EXPECT_TRUE(rogue.wait_closed(10s));
  }
  EXPECT_TRUE(relay.proc->wait_for_line(std::regex("the peer is not reading; closing"), 10s));
  check_bystander(agent.public_port);
  EXPECT_TRUE(relay.proc->running());
}

TEST_F(hostile_test, BadHelloIsRefusedWithoutCrashing) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto agent = start_agent(relay, echo.port());
  ASSERT_NE(agent.public_port, 0);
  EXPECT_FALSE(rogue_agent(relay.agent_port, "brw_wrong").welcomed());
  check_bystander(agent.public_port);
  EXPECT_TRUE(relay.proc->running());
}

}  // namespace
}  // namespace burrow::test
