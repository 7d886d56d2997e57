// Port claims: free ports, joining links, another token's ports, takeover by a restarted agent,
// grace periods and release. Real listeners on 127.0.0.1; links are never connected.
#include "relay/port_registry.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>

#include "harness/net.hpp"
#include "link/link.hpp"
#include "relay/public_port.hpp"

namespace burrow::relay {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

class registry_test : public ::testing::Test {
 protected:
  std::shared_ptr<link::link> make_link() {
    return std::make_shared<link::link>(link::tls_stream(asio::ip::tcp::socket(ioc_), ssl_),
                                        link::link_role::acceptor, link::link_limits{}, "test");
  }
  std::unique_ptr<port_registry> make_registry(port_range range, std::chrono::milliseconds grace) {
    return std::make_unique<port_registry>(
        range, grace, "relay.test",
        [this](std::uint16_t port, std::string_view,
               std::string& error) -> std::shared_ptr<public_port> {
          try {
            return std::make_shared<public_port>(
                ioc_.get_executor(), std::vector<std::string>{"127.0.0.1"}, port,
                [this](asio::ip::tcp::socket s, const asio::ip::tcp::endpoint&, std::uint16_t) {
                  accepted_.push_back(std::move(s));
                },
                0s);
          } catch (const std::exception& e) {
            error = e.what();
            return nullptr;
          }
        });
  }
  asio::io_context ioc_;
  asio::ssl::context ssl_{asio::ssl::context::tls};
  std::vector<asio::ip::tcp::socket> accepted_;  // visitors of every port, as accepted
  owner_id alice{"token-a", "session-1"};
  owner_id alice_restarted{"token-a", "session-2"};
  owner_id bob{"token-b", "session-9"};
};

TEST_F(registry_test, AnyPortIsBoundAndSharedByTheSameAgentsLinks) {
  auto reg = make_registry({0, 0}, 30s);
  auto l1 = make_link(), l2 = make_link();
  auto r1 = reg->claim(alice, {"db", proto::tunnel_kind::tcp_port, 0}, l1);
  ASSERT_TRUE(r1.ok) << r1.message;
  EXPECT_NE(r1.remote_port, 0);
  EXPECT_EQ(r1.public_address, "relay.test:" + std::to_string(r1.remote_port));
  auto r2 =
      reg->claim(alice, {"db", proto::tunnel_kind::tcp_port, 0}, l2);  // the agent's second link
  ASSERT_TRUE(r2.ok);
  EXPECT_EQ(r2.remote_port, r1.remote_port);
  EXPECT_EQ(reg->size(), 1u);
  auto a = reg->pick(r1.remote_port).link, b = reg->pick(r1.remote_port).link;
  EXPECT_NE(a, b);  // visitors alternate between the links
  EXPECT_EQ(reg->pick(r1.remote_port).service, "db");
}

TEST_F(registry_test, AnotherTokensPortIsRefusedWhileHeldAndWhileReserved) {
  auto reg = make_registry({0, 0}, 30s);
  auto la = make_link(), lb = make_link();
  auto held = reg->claim(alice, {"db", proto::tunnel_kind::tcp_port, 0}, la);
  ASSERT_TRUE(held.ok);
  auto refused = reg->claim(bob, {"x", proto::tunnel_kind::tcp_port, held.remote_port}, lb);
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.code, "port_in_use");
  reg->detach(la.get());
  EXPECT_FALSE(reg->pick(held.remote_port).link);
  auto reserved = reg->claim(bob, {"x", proto::tunnel_kind::tcp_port, held.remote_port}, lb);
  EXPECT_FALSE(reserved.ok);
  EXPECT_EQ(reserved.code, "port_reserved");
  EXPECT_NE(reserved.message.find("reserved"), std::string::npos);
}

TEST_F(registry_test, ARestartedAgentWithTheSameTokenTakesItsPortBack) {
  auto reg = make_registry({0, 0}, 30s);
  auto old_link = make_link(), new_link = make_link();
  auto first = reg->claim(alice, {"db", proto::tunnel_kind::tcp_port, 0}, old_link);
  ASSERT_TRUE(first.ok);
  // The old link may still look alive (half-open); the newest agent wins anyway.
  auto again = reg->claim(alice_restarted, {"db", proto::tunnel_kind::tcp_port, first.remote_port},
                          new_link);
  ASSERT_TRUE(again.ok) << again.message;
  EXPECT_EQ(again.remote_port, first.remote_port);
  EXPECT_EQ(reg->pick(first.remote_port).link, new_link);
}

TEST_F(registry_test, KeepaliveReachesTheNextVisitorsOfEveryBoundPort) {
  auto reg = make_registry({0, 0}, 30s);
  auto l = make_link();
  auto r = reg->claim(alice, {"db", proto::tunnel_kind::tcp_port, 0}, l);
  ASSERT_TRUE(r.ok) << r.message;
  auto gone = make_link();
  ASSERT_TRUE(reg->claim(bob, {"x", proto::tunnel_kind::tcp_port, 0}, gone).ok);
  reg->detach(gone.get());  // reserved in grace: no listener left to reach
  std::vector<std::uint16_t> seen;
  reg->for_each_listener([&](public_port& p) {
    seen.push_back(p.port());
    p.set_keepalive(25s);
  });
  EXPECT_EQ(seen, std::vector<std::uint16_t>{r.remote_port});
  ioc_.poll();  // the port sets it on its own executor

  asio::ip::tcp::socket visitor(ioc_);
  visitor.connect({asio::ip::make_address("127.0.0.1"), r.remote_port});
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (accepted_.empty() && std::chrono::steady_clock::now() < deadline) ioc_.run_one_for(50ms);
  ASSERT_EQ(accepted_.size(), 1u);
  // What the listener was given, the accepted socket has, without a call of its own.
  int fd = accepted_[0].native_handle();
  EXPECT_EQ(test::socket_int_option(fd, SOL_SOCKET, SO_KEEPALIVE), 1);
  EXPECT_EQ(test::socket_int_option(fd, IPPROTO_TCP, TCP_KEEPIDLE), 25);
  EXPECT_EQ(test::socket_int_option(fd, IPPROTO_TCP, TCP_KEEPINTVL), 4);
  EXPECT_EQ(test::socket_int_option(fd, IPPROTO_TCP, TCP_KEEPCNT), 6);
  EXPECT_EQ(test::socket_int_option(fd, IPPROTO_TCP, TCP_NODELAY), 1);
}

TEST_F(registry_test, GracePeriodKeepsThenReleasesThePort) {
  auto reg = make_registry({0, 0}, 50ms);
  auto l = make_link();
  auto r = reg->claim(alice, {"db", proto::tunnel_kind::tcp_port, 0}, l);
  ASSERT_TRUE(r.ok);
  reg->detach(l.get());
  EXPECT_EQ(reg->expire(std::chrono::steady_clock::now()), 0u);
  EXPECT_EQ(reg->expire(std::chrono::steady_clock::now() + 100ms), 1u);
  EXPECT_EQ(reg->size(), 0u);
  ioc_.poll();  // listeners close on their own executor
  auto other = reg->claim(bob, {"x", proto::tunnel_kind::tcp_port, r.remote_port}, make_link());
  EXPECT_TRUE(other.ok) << other.message;
}

TEST_F(registry_test, ZeroGraceReleasesAtOnce) {
  auto reg = make_registry({0, 0}, 0ms);
  auto l = make_link();
  ASSERT_TRUE(reg->claim(alice, {"db", proto::tunnel_kind::tcp_port, 0}, l).ok);
  reg->detach(l.get());
  EXPECT_EQ(reg->size(), 0u);
}

TEST_F(registry_test, RangeIsHonouredAndExhaustionIsReported) {
  std::uint16_t p = test::free_port();
  auto reg = make_registry({p, p}, 30s);
  auto r = reg->claim(alice, {"a", proto::tunnel_kind::tcp_port, 0}, make_link());
  ASSERT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.remote_port, p);
  auto full = reg->claim(alice, {"b", proto::tunnel_kind::tcp_port, 0}, make_link());
  EXPECT_FALSE(full.ok);
  EXPECT_EQ(full.code, "no_free_port");
  auto outside = reg->claim(
      alice,
      {"c", proto::tunnel_kind::tcp_port, static_cast<std::uint16_t>(p == 65535 ? 1024 : p + 1)},
      make_link());
  EXPECT_EQ(outside.code, "port_not_allowed");
}

TEST_F(registry_test, APortSomeoneElseListensOnIsUnavailable) {
  test::tcp_server squatter(test::server_mode::echo);
  auto reg = make_registry({0, 0}, 30s);
  auto r = reg->claim(alice, {"db", proto::tunnel_kind::tcp_port, squatter.port()}, make_link());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.code, "port_unavailable");
}

}  // namespace
}  // namespace burrow::relay
