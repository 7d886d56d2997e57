// Listeners from make_acceptor, on real loopback sockets: the options every accepted socket needs
// are set once on the listener and arrive with each socket accept() returns; keepalive can be
// turned on, changed and off for the sockets accepted after that, and the ones accepted before
// keep what they had.
#include "core/acceptor.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <boost/asio/io_context.hpp>
#include <chrono>

#include "harness/net.hpp"

namespace burrow {
namespace acceptor_test {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;

int int_option(tcp::socket& s, int level, int name) {
  return test::socket_int_option(s.native_handle(), level, name);
}

struct listening {
  asio::io_context io;
  std::unique_ptr<tcp::acceptor> acceptor =
      make_acceptor(io.get_executor(), {asio::ip::make_address("127.0.0.1"), 0});
  std::vector<tcp::socket> clients;
  // A new connection, as the listener's side accepted it.
  tcp::socket next() {
    clients.emplace_back(io).connect(acceptor->local_endpoint());
    return acceptor->accept();
  }
};

TEST(Acceptor, AcceptedSocketsArriveWithNoDelayAndInq) {
  listening l;
  auto s = l.next();
  EXPECT_EQ(int_option(s, IPPROTO_TCP, TCP_NODELAY), 1);
  EXPECT_EQ(int_option(s, IPPROTO_TCP, TCP_INQ), 1);
  EXPECT_EQ(int_option(s, SOL_SOCKET, SO_KEEPALIVE), 0);  // only when asked for
}

TEST(Acceptor, KeepaliveGoesToTheSocketsAcceptedAfterIt) {
  listening l;
  set_keepalive(*l.acceptor, 60s);
  auto first = l.next();
  EXPECT_EQ(int_option(first, SOL_SOCKET, SO_KEEPALIVE), 1);
  EXPECT_EQ(int_option(first, IPPROTO_TCP, TCP_KEEPIDLE), 60);
  EXPECT_EQ(int_option(first, IPPROTO_TCP, TCP_KEEPINTVL), 10);
  EXPECT_EQ(int_option(first, IPPROTO_TCP, TCP_KEEPCNT), 6);

  set_keepalive(*l.acceptor, 3s);  // probes at least a second apart
  auto second = l.next();
  EXPECT_EQ(int_option(second, IPPROTO_TCP, TCP_KEEPIDLE), 3);
  EXPECT_EQ(int_option(second, IPPROTO_TCP, TCP_KEEPINTVL), 1);

  set_keepalive(*l.acceptor, 0s);
  auto third = l.next();
  EXPECT_EQ(int_option(third, SOL_SOCKET, SO_KEEPALIVE), 0);
  // Sockets accepted earlier keep theirs.
  EXPECT_EQ(int_option(first, SOL_SOCKET, SO_KEEPALIVE), 1);
  EXPECT_EQ(int_option(first, IPPROTO_TCP, TCP_KEEPIDLE), 60);
}

TEST(Acceptor, AnIdleTimeBeyondWhatTcpTakesIsCappedNotDropped) {
  listening l;
  set_keepalive(*l.acceptor, std::chrono::seconds(24 * 3600));  // over TCP's 32767 s
  auto s = l.next();
  EXPECT_EQ(int_option(s, SOL_SOCKET, SO_KEEPALIVE), 1);
  EXPECT_EQ(int_option(s, IPPROTO_TCP, TCP_KEEPIDLE), 32767);
}

TEST(Acceptor, AClosedListenerIsLeftAlone) {
  listening l;
  l.acceptor->close();
  set_keepalive(*l.acceptor, 60s);  // no descriptor to set: nothing happens
  EXPECT_FALSE(l.acceptor->is_open());
}

}  // namespace
}  // namespace acceptor_test
}  // namespace burrow
