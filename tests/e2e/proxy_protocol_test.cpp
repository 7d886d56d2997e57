// PROXY protocol v1 and v2 headers reach the local service with the visitor's real address.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "e2e/tunnel_fixture.hpp"
#include "proto/proxy_protocol.hpp"

namespace burrow::test {
namespace {

struct visit {
  std::uint16_t visitor_port = 0;
  std::string reply;
};

visit visit_once(std::uint16_t port) {
  visit v;
  int fd = connect_tcp(port, 5s);
  if (fd < 0) return v;
  sockaddr_in me{};
  socklen_t len = sizeof me;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len);
  v.visitor_port = ntohs(me.sin_port);
  write_all(fd, "payload", 5s);
  ::shutdown(fd, SHUT_WR);
  v.reply = read_until_eof(fd, 5s, 4096).value_or("");
  ::close(fd);
  return v;
}

TEST_F(tunnel_test, ProxyProtocolV1HeaderPrecedesTheVisitorsBytes) {
  tcp_server echo(tcp_server_options{.mode = server_mode::echo, .record_prefix = 200});
  auto relay = start_relay();
  auto agent = start_agent(relay, echo.port(), {"--proxy-protocol", "v1"});
  ASSERT_NE(agent.public_port, 0);
  auto v = visit_once(agent.public_port);
  std::string expected = "PROXY TCP4 127.0.0.1 127.0.0.1 " + std::to_string(v.visitor_port) + " " +
                         std::to_string(agent.public_port) + "\r\n";
  EXPECT_EQ(v.reply, expected + "payload");
  auto prefixes = echo.received_prefixes();
  ASSERT_EQ(prefixes.size(), 1u);
  EXPECT_EQ(prefixes[0].substr(0, expected.size()), expected);
}

TEST_F(tunnel_test, ProxyProtocolV2HeaderParsesToTheVisitorsAddress) {
  tcp_server echo(tcp_server_options{.mode = server_mode::echo, .record_prefix = 200});
  auto relay = start_relay();
  auto agent = start_agent(relay, echo.port(), {"--proxy-protocol", "v2"});
  ASSERT_NE(agent.public_port, 0);
  auto v = visit_once(agent.public_port);
  proto::proxy_info info;
  auto bytes = std::span(reinterpret_cast<const std::uint8_t*>(v.reply.data()), v.reply.size());
  ASSERT_EQ(proto::parse_proxy_header(bytes, info), proto::proxy_parse::ok);
  EXPECT_EQ(info.source.address().to_string(), "127.0.0.1");
  EXPECT_EQ(info.source.port(), v.visitor_port);
  EXPECT_EQ(info.destination.port(), agent.public_port);
  EXPECT_EQ(v.reply.substr(info.header_length), "payload");
}

}  // namespace
}  // namespace burrow::test
