// `burrow forward` end to end: the real binary between real clients and servers on loopback.
// Bytes both ways intact (HTTP through curl, a 20 MB body), half-close carried over, a PROXY
// protocol header, several forwards from one file, per-source limits, a target that is down, and
// the drain on SIGTERM.
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "e2e/tunnel_fixture.hpp"
#include "harness/hostile.hpp"
#include "harness/http_service.hpp"

namespace burrow::test {
namespace {

class forward_test : public tunnel_test {
 protected:
  // `burrow forward ARGS...`; waits for every "forwarding ADDR to TARGET" line and returns the
  // ports it listens on, in order.
  std::unique_ptr<child_process> start_forward(std::vector<std::string> args,
                                               std::vector<std::uint16_t>& ports,
                                               std::size_t rules = 1) {
    std::vector<std::string> argv{BURROW_BINARY, "forward"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto p = child_process::start("forward", argv);
    for (std::size_t i = 0; i < rules; ++i) {
      auto line =
          p->wait_for_line(std::regex("^forwarding 127\\.0\\.0\\.1:([0-9]+) to (.*)$"), 10s);
      if (!line) {
        ADD_FAILURE() << p->output();
        return p;
      }
    }
    std::istringstream out(p->output());
    std::string line;
    std::smatch m;
    const std::regex re("^forwarding 127\\.0\\.0\\.1:([0-9]+) to ");
    while (std::getline(out, line))
      if (std::regex_search(line, m, re))
        ports.push_back(static_cast<std::uint16_t>(std::stoi(m[1])));
    return p;
  }
  // One rule to 127.0.0.1:`target` with `extra` flags; the port it listens on (0 on failure).
  std::uint16_t forward_to(std::uint16_t target, std::unique_ptr<child_process>& fwd,
                           std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"0", "127.0.0.1:" + std::to_string(target)};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<std::uint16_t> ports;
    fwd = start_forward(args, ports);
    return ports.size() == 1 ? ports[0] : 0;
  }
  // Writes `text` and reads as many bytes back, from an echo target.
  static std::string echoed(int fd, const std::string& text) {
    if (!write_all(fd, text, 5s)) return "";
    return read_exact(fd, text.size(), 5s).value_or("");
  }
  std::optional<std::string> curl(std::uint16_t port, const std::string& path) {
    auto p = child_process::start(
        "curl", {"/usr/bin/curl", "-sS", "--max-time", "20", "-w", "\nstatus=%{http_code}",
                 "http://127.0.0.1:" + std::to_string(port) + path});
    auto code = p->wait_exit(30s);
    if (!code || *code != 0) return std::nullopt;
    return p->output();
  }
};

TEST_F(forward_test, HttpAndA20MegabyteBodyPassIntact) {
  http_service web;
  std::unique_ptr<child_process> fwd;
  const auto port = forward_to(web.port(), fwd);
  ASSERT_NE(port, 0);
  auto page = curl(port, "/headers");
  ASSERT_TRUE(page);
  EXPECT_NE(page->find("status=200"), std::string::npos) << *page;
  const std::uint64_t size = 20'000'000;
  int fd = connect_tcp(port, 5s);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(write_all(
      fd,
      "GET /bytes/" + std::to_string(size) + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
      5s));
  auto got = read_until_eof(fd, 30s, size + 4096);
  ::close(fd);
  ASSERT_TRUE(got);
  const auto body_at = got->find("\r\n\r\n");
  ASSERT_NE(body_at, std::string::npos);
  EXPECT_EQ(got->size() - body_at - 4, size);
  EXPECT_TRUE(got->substr(body_at + 4) == pattern_bytes(0, size));
}

// The visitor's FIN reaches the target as a FIN, and the answer after it still comes back.
TEST_F(forward_test, AHalfCloseIsCarriedOver) {
  tcp_server echo(server_mode::echo);
  std::unique_ptr<child_process> fwd;
  const auto port = forward_to(echo.port(), fwd);
  ASSERT_NE(port, 0);
  int fd = connect_tcp(port, 5s);
  ASSERT_GE(fd, 0);
  const std::string sent = deterministic_bytes(300'000, 7);
  ASSERT_TRUE(write_all(fd, sent, 10s));
  ::shutdown(fd, SHUT_WR);
  auto back = read_until_eof(fd, 10s, sent.size() + 1);
  ::close(fd);
  ASSERT_TRUE(back);
  EXPECT_TRUE(*back == sent) << back->size();
}

TEST_F(forward_test, APROXYv2HeaderTellsTheTargetWhoCame) {
  tcp_server target(tcp_server_options{.mode = server_mode::echo, .record_prefix = 28});
  std::unique_ptr<child_process> fwd;
  const auto port = forward_to(target.port(), fwd, {"--proxy-protocol", "v2"});
  ASSERT_NE(port, 0);
  int fd = connect_tcp(port, 5s);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(write_all(fd, "hello", 5s));
  ::shutdown(fd, SHUT_WR);
  auto back = read_until_eof(fd, 10s, 100);
  ::close(fd);
  ASSERT_TRUE(back);
  // The target echoes what it got: the header, then the visitor's bytes.
  EXPECT_EQ(back->size(), 28u + 5u);
  EXPECT_TRUE(back->ends_with("hello"));
  ASSERT_EQ(target.received_prefixes().size(), 1u);
  const std::string header = target.received_prefixes().front();
  ASSERT_EQ(header.size(), 28u);
  EXPECT_EQ(header.substr(0, 12), std::string("\r\n\r\n\0\r\nQUIT\n", 12));
  EXPECT_EQ(header.substr(16, 4), std::string("\x7f\0\0\x01", 4));  // 127.0.0.1 came
  const std::uint16_t dest_port = static_cast<std::uint16_t>(
      (static_cast<unsigned char>(header[26]) << 8) | static_cast<unsigned char>(header[27]));
  EXPECT_EQ(dest_port, port);
}

TEST_F(forward_test, SeveralForwardsFromOneFile) {
  http_service web;
  tcp_server echo(server_mode::echo);
  std::ofstream(dir_ / "forward.toml")
      << "connect_timeout = \"2s\"\n\n[[forward]]\nlisten = \"127.0.0.1:0\"\ntarget = "
         "\"127.0.0.1:"
      << web.port() << "\"\n\n[[forward]]\nlisten = \"0\"\ntarget = \"localhost:" << echo.port()
      << "\"\n";
  std::vector<std::uint16_t> ports;
  auto fwd = start_forward({"-c", (dir_ / "forward.toml").string()}, ports, 2);
  ASSERT_EQ(ports.size(), 2u);
  auto page = curl(ports[0], "/headers");
  ASSERT_TRUE(page);
  EXPECT_NE(page->find("status=200"), std::string::npos);
  int fd = connect_tcp(ports[1], 5s);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(write_all(fd, "ping", 5s));
  ::shutdown(fd, SHUT_WR);
  auto back = read_until_eof(fd, 10s, 100);
  ::close(fd);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, "ping");

  // A table that misses its target, or a key no table takes, is refused with its place.
  std::ofstream(dir_ / "bad.toml") << "[[forward]]\nlisten = \"0\"\n";
  auto bad = child_process::start("forward",
                                  {BURROW_BINARY, "forward", "-c", (dir_ / "bad.toml").string()});
  EXPECT_EQ(bad->wait_exit(10s), 1);
  EXPECT_NE(bad->output().find("[[forward]] 1 needs both listen and target"), std::string::npos)
      << bad->output();
  std::ofstream(dir_ / "typo.toml") << "[[forward]]\nlisten = \"0\"\ntraget = \"x:1\"\n";
  auto typo = child_process::start("forward",
                                   {BURROW_BINARY, "forward", "-c", (dir_ / "typo.toml").string()});
  EXPECT_EQ(typo->wait_exit(10s), 1);
  EXPECT_NE(typo->output().find("unknown setting 'traget' in [[forward]]"), std::string::npos)
      << typo->output();
}

TEST_F(forward_test, ASourceOverItsLimitIsRefusedAndOthersGoOn) {
  tcp_server echo(server_mode::echo);
  std::unique_ptr<child_process> fwd;
  const auto port = forward_to(echo.port(), fwd, {"--source-connections", "2"});
  ASSERT_NE(port, 0);
  int a = connect_tcp(port, 5s), b = connect_tcp(port, 5s);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  EXPECT_EQ(echoed(a, "a"), "a");
  EXPECT_EQ(echoed(b, "b"), "b");
  // The third is reset at accept: before the client's connect returns, or just after.
  int third = connect_tcp(port, 5s);
  if (third >= 0) {
    EXPECT_TRUE(closed_by_peer(third, 5s));
    ::close(third);
  }
  EXPECT_TRUE(fwd->wait_for_line(std::regex("refused 127\\.0\\.0\\.1: too many open"), 5s))
      << fwd->output();
  // The two admitted ones still work; once one closes, a new one is admitted.
  EXPECT_EQ(echoed(a, "again"), "again");
  ::close(b);
  // Once b's connection has ended at the forward too, a new one is admitted.
  bool admitted = false;
  for (auto until = std::chrono::steady_clock::now() + 10s;
       !admitted && std::chrono::steady_clock::now() < until;) {
    int fourth = connect_tcp(port, 5s);
    if (fourth >= 0) {
      admitted = echoed(fourth, "d") == "d";
      ::close(fourth);
    }
    if (!admitted) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(admitted);
  ::close(a);
}

TEST_F(forward_test, ATargetThatIsDownResetsTheVisitorAndSaysWhy) {
  const auto nobody = free_port();
  std::unique_ptr<child_process> fwd;
  const auto port = forward_to(nobody, fwd);
  ASSERT_NE(port, 0);
  int fd = connect_tcp(port, 5s);  // reset once the target refuses: maybe before this returns
  if (fd >= 0) {
    EXPECT_TRUE(closed_by_peer(fd, 5s));
    ::close(fd);
  }
  EXPECT_TRUE(fwd->wait_for_line(std::regex("cannot reach the target: Connection refused"), 5s))
      << fwd->output();
  EXPECT_TRUE(fwd->running());
}

TEST_F(forward_test, SigtermStopsAcceptingAndLetsOpenConnectionsFinish) {
  tcp_server echo(server_mode::echo);
  std::unique_ptr<child_process> fwd;
  const auto port = forward_to(echo.port(), fwd);
  ASSERT_NE(port, 0);
  int open = connect_tcp(port, 5s);
  ASSERT_GE(open, 0);
  EXPECT_EQ(echoed(open, "x"), "x");
  fwd->signal(SIGTERM);
  ASSERT_TRUE(fwd->wait_for_line(std::regex("stopped accepting; 1 connection"), 5s))
      << fwd->output();
  EXPECT_LT(connect_tcp(port, 2s), 0);  // the listener is closed
  EXPECT_EQ(echoed(open, "y"), "y");    // the open one still works
  ::close(open);
  EXPECT_EQ(fwd->wait_exit(5s), 0) << fwd->output();
}

TEST_F(forward_test, TheDrainEndsAtItsTimeout) {
  tcp_server echo(server_mode::echo);
  std::unique_ptr<child_process> fwd;
  const auto port = forward_to(echo.port(), fwd, {"--drain-timeout", "1s"});
  ASSERT_NE(port, 0);
  int open = connect_tcp(port, 5s);
  ASSERT_GE(open, 0);
  EXPECT_EQ(echoed(open, "x"), "x");
  const auto start = std::chrono::steady_clock::now();
  fwd->signal(SIGTERM);
  EXPECT_EQ(fwd->wait_exit(5s), 0) << fwd->output();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  EXPECT_NE(fwd->output().find("drain timeout: closing 1 connection"), std::string::npos);
  ::close(open);
}

TEST_F(forward_test, BadArgumentsAreRefusedWithAReason) {
  struct bad {
    std::vector<std::string> args;
    const char* says;
  };
  for (const auto& b : std::vector<bad>{
           {{"0"}, "give both LISTEN and TARGET"},
           {{}, "nothing to forward"},
           {{"0", "127.0.0.1"}, "must be HOST:PORT"},
           {{"not-an-ip:80", "127.0.0.1:80"}, "must be PORT or IP:PORT"},
           {{"0", "127.0.0.1:80", "--proxy-protocol", "v3"}, "proxy-protocol must be"}}) {
    std::vector<std::string> argv{BURROW_BINARY, "forward"};
    argv.insert(argv.end(), b.args.begin(), b.args.end());
    auto p = child_process::start("forward", argv);
    EXPECT_EQ(p->wait_exit(10s), 1) << b.says;
    EXPECT_NE(p->output().find(b.says), std::string::npos) << p->output();
  }
  // A port another process holds.
  tcp_server holder(server_mode::echo);
  auto p = child_process::start(
      "forward", {BURROW_BINARY, "forward", std::to_string(holder.port()), "127.0.0.1:80"});
  EXPECT_EQ(p->wait_exit(10s), 1);
  EXPECT_NE(p->output().find("cannot listen on " + std::to_string(holder.port()) +
                             ": Address already in use"),
            std::string::npos)
      << p->output();
}

}  // namespace
}  // namespace burrow::test
