// TCP keepalive on the relay's side of every connection it accepts (public ports, HTTPS, HTTP and
// agent links), read from the kernel's own table of TCP sockets (/proc/net/tcp: which timer each
// socket has pending, and when it fires). The relay sets it on its listeners, and a reload of
// tcp-keepalive reaches the connections that arrive after it.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <thread>

#include "e2e/tunnel_fixture.hpp"

namespace burrow::test {
namespace tcp_keepalive_test {
namespace {

// A socket's pending timer as /proc/net/tcp shows it: kind 2 is keepalive (the only one besides
// retransmission and window probes that an established TCP socket has), 0 none.
struct tcp_timer {
  int kind = -1;
  double seconds = 0;  // until it fires
};

// The established 127.0.0.1 socket with local port `local` and, unless 0, remote port `remote`.
std::optional<tcp_timer> timer_of(std::uint16_t local, std::uint16_t remote) {
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // the header
  for (int rows = 0; rows < 100000 && std::getline(table, line); ++rows) {
    std::istringstream in(line);
    std::string slot, local_address, remote_address, state, queues, timer;
    in >> slot >> local_address >> remote_address >> state >> queues >> timer;
    auto port_of = [](const std::string& a) {
      auto colon = a.find(':');
      return colon == std::string::npos ? 0 : std::stoi(a.substr(colon + 1), nullptr, 16);
    };
    if (state != "01" || !local_address.starts_with("0100007F") || port_of(local_address) != local)
      continue;
    if (remote != 0 && port_of(remote_address) != remote) continue;
    auto colon = timer.find(':');
    if (colon == std::string::npos) return std::nullopt;
    tcp_timer t;
    t.kind = std::stoi(timer.substr(0, colon), nullptr, 16);
    t.seconds = double(std::stoul(timer.substr(colon + 1), nullptr, 16)) / ::sysconf(_SC_CLK_TCK);
    return t;
  }
  return std::nullopt;
}

std::uint16_t local_port(int fd) {
  sockaddr_in a{};
  socklen_t size = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size);
  return ntohs(a.sin_port);
}

// Connects to `port` and reads the relay's side of that connection: it is in the table once the
// handshake is done, which connect() returning does not wait for on the accepting side.
std::optional<tcp_timer> relay_side_of_new_connection(std::uint16_t port, int& fd) {
  fd = connect_tcp(port, 5s);
  if (fd < 0) return std::nullopt;
  auto client = local_port(fd);
  for (auto until = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(10ms))
    if (auto t = timer_of(port, client)) return t;
  return std::nullopt;
}

TEST_F(tunnel_test, KeepaliveIsOnForEveryKindOfConnectionAndFollowsAReload) {
  tcp_server echo(server_mode::echo);
  auto config = dir_ / "relay.toml";
  { std::ofstream(config) << "tcp-keepalive = \"40s\"\n"; }
  auto relay = start_relay({"-c", config.string()});
  auto agent = start_agent(relay, echo.port());
  ASSERT_NE(agent.public_port, 0);

  // The agent's link, as the relay accepted it. Its pings keep it busy: while one waits for its
  // ACK, the retransmission timer (kind 1) is the one shown.
  std::optional<tcp_timer> link;
  for (auto until = std::chrono::steady_clock::now() + 5s;
       std::chrono::steady_clock::now() < until && !(link && link->kind == 2);
       std::this_thread::sleep_for(10ms))
    link = timer_of(relay.agent_port, 0);
  ASSERT_TRUE(link);
  EXPECT_EQ(link->kind, 2);
  EXPECT_LE(link->seconds, 40.0);

  for (auto port : {agent.public_port, relay.https_port, relay.http_port}) {
    int fd = -1;
    auto t = relay_side_of_new_connection(port, fd);
    ASSERT_TRUE(t) << port;
    EXPECT_EQ(t->kind, 2) << port;
    EXPECT_GT(t->seconds, 30.0) << port;
    EXPECT_LE(t->seconds, 40.0) << port;
    ::close(fd);
  }

  auto reload = [&](const char* text) {
    auto lines = relay.proc->line_count();
    { std::ofstream(config) << text; }
    relay.proc->signal(SIGHUP);
    return relay.proc->wait_for_line_after(lines, std::regex("configuration reloaded"), 5s);
  };
  // Each listener takes the new setting on its own thread, a moment after the reload's log line:
  // new connections until one shows timer `kind` within `at_most` seconds, or the deadline. The
  // bound matters for a listener that may still have the setting from before the last two
  // reloads: 40 s shows the same kind as 20 s.
  auto after_reload = [&](std::uint16_t port, int kind,
                          double at_most = std::numeric_limits<double>::infinity()) {
    std::optional<tcp_timer> t;
    for (auto until = std::chrono::steady_clock::now() + 5s;
         std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(20ms)) {
      int fd = -1;
      t = relay_side_of_new_connection(port, fd);
      if (fd >= 0) ::close(fd);
      if (t && t->kind == kind && t->seconds <= at_most) break;
    }
    return t;
  };
  ASSERT_TRUE(reload("tcp-keepalive = \"0\"\n"));
  for (auto port : {agent.public_port, relay.https_port}) {
    auto t = after_reload(port, 0);
    ASSERT_TRUE(t) << port;
    EXPECT_EQ(t->kind, 0) << port << ": keepalive still on after tcp-keepalive = 0";
  }

  ASSERT_TRUE(reload("tcp-keepalive = \"20s\"\n"));
  for (auto port : {agent.public_port, relay.http_port}) {
    auto t = after_reload(port, 2, 20.0);
    ASSERT_TRUE(t) << port;
    EXPECT_EQ(t->kind, 2) << port;
    EXPECT_GT(t->seconds, 10.0) << port;
    EXPECT_LE(t->seconds, 20.0) << port;
  }
  // And the tunnel still carries its bytes.
  check_bystander(agent.public_port);
}

}  // namespace
}  // namespace tcp_keepalive_test
}  // namespace burrow::test
