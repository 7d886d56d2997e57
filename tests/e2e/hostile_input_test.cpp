// Hostile input on the agent port: random bytes, truncated TLS, a valid TLS session that sends
// garbage frames, oversized frames and streams opened where they may not be. The relay stays up,
// another tunnel's transfer completes intact, and the log says what happened.
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>

#include "e2e/tunnel_fixture.hpp"
#include "proto/control.hpp"
#include "proto/frame.hpp"

namespace burrow::test {
namespace {

namespace asio = boost::asio;

std::string frame(proto::frame_type type, std::uint8_t flags, std::uint32_t id,
                  std::string_view payload) {
  std::string out(proto::frame_header_size, '\0');
  proto::encode_header({static_cast<std::uint32_t>(payload.size()), type, flags, id},
                       std::span<std::uint8_t, proto::frame_header_size>(
                           reinterpret_cast<std::uint8_t*>(out.data()), proto::frame_header_size));
  return out + std::string(payload);
}

// A TLS client that authenticates as an agent and then misbehaves.
class rogue_agent {
 public:
  rogue_agent(std::uint16_t port, const std::string& token)
      : ctx_(asio::ssl::context::tls_client), tls_(io_, ctx_) {
    ctx_.set_verify_mode(asio::ssl::verify_none);
    SSL_CTX_set_min_proto_version(ctx_.native_handle(), TLS1_3_VERSION);
    static const unsigned char alpn[] =
        "\x08"
        "burrow/1";
    SSL_set_alpn_protos(tls_.native_handle(), alpn, sizeof alpn - 1);
    tls_.lowest_layer().connect({asio::ip::make_address("127.0.0.1"), port});
    tls_.handshake(asio::ssl::stream_base::client);
    proto::hello h{{proto::protocol_version}, "agent", token, "rogue-session", 0, "rogue"};
    send(frame(proto::frame_type::control, 0, 0, proto::encode_control(h)));
    std::uint8_t head[proto::frame_header_size];
    asio::read(tls_, asio::buffer(head));
    std::string body((head[0] << 16) | (head[1] << 8) | head[2], '\0');
    asio::read(tls_, asio::buffer(body));
    welcomed_ = body.find("welcome") != std::string::npos;
  }
  bool welcomed() const { return welcomed_; }
  void send(const std::string& bytes) {
    boost::system::error_code ec;
    asio::write(tls_, asio::buffer(bytes), ec);
  }
  // Reads until the relay ends the connection (or `limit` passes). Closing first would make the
  // kernel answer the relay's unread replies with an RST, which discards what we sent.
  bool wait_closed(std::chrono::seconds limit) {
    timeval tv{static_cast<time_t>(limit.count()), 0};
    ::setsockopt(tls_.lowest_layer().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[4096];
    boost::system::error_code ec;
    auto until = std::chrono::steady_clock::now() + limit;
    while (!ec && std::chrono::steady_clock::now() < until) tls_.read_some(asio::buffer(buf), ec);
    return ec == asio::error::eof || ec == asio::ssl::error::stream_truncated ||
           ec == asio::error::connection_reset;
  }

 private:
  asio::io_context io_;
  asio::ssl::context ctx_;
  asio::ssl::stream<asio::ip::tcp::socket> tls_;
  bool welcomed_ = false;
};

void send_raw(std::uint16_t port, const std::string& bytes) {
  int fd = connect_tcp(port, 5s);
  if (fd < 0) return;
  write_all(fd, bytes, 5s);
  ::close(fd);
}

class hostile_test : public tunnel_test {
 protected:
  // A healthy tunnel that must keep working through every attack.
  void check_bystander(std::uint16_t port) {
    std::string payload = deterministic_bytes(4u << 20, 21);
    auto back = exchange(port, payload, 30s);
    ASSERT_TRUE(back);
    EXPECT_EQ(sha256_hex(*back), sha256_hex(payload));
  }
};

TEST_F(hostile_test, RandomBytesAndTruncatedTlsOnTheAgentPort) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay({"--handshake-timeout", "1s"});
  auto agent = start_agent(relay, echo.port());
  ASSERT_NE(agent.public_port, 0);
  for (int i = 0; i < 20; ++i) send_raw(relay.agent_port, deterministic_bytes(100 + i * 97, i));
  // The start of a real ClientHello, cut off.
  send_raw(relay.agent_port, std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11));
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
