// The test harness itself: the socket helpers and child_process, so e2e failures point at the
// product rather than the harness.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <regex>
#include <thread>
#include <utility>

#include "harness/net.hpp"
#include "harness/process.hpp"

namespace burrow::test {
namespace {

using namespace std::chrono_literals;

struct fd_guard {
  int fd;
  explicit fd_guard(int f) : fd(f) {}
  fd_guard(fd_guard&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  fd_guard(const fd_guard&) = delete;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

TEST(HarnessNet, EchoRoundTripWithHalfClose) {
  tcp_server server(tcp_server_options{.mode = server_mode::echo, .record_prefix = 4});
  fd_guard c{connect_tcp(server.port(), 2s)};
  ASSERT_GE(c.fd, 0) << std::strerror(errno);
  const auto payload = deterministic_bytes(300'000, 7);
  std::thread writer([&] {
    EXPECT_TRUE(write_all(c.fd, payload, 5s));
    ::shutdown(c.fd, SHUT_WR);
  });
  auto back = read_until_eof(c.fd, 5s, 1 << 20);
  writer.join();
  ASSERT_TRUE(back);
  EXPECT_EQ(sha256_hex(*back), sha256_hex(payload));
  EXPECT_EQ(server.accepted(), 1u);
  EXPECT_EQ(server.received_prefixes(), std::vector<std::string>{payload.substr(0, 4)});
}

TEST(HarnessNet, SinkHashAndSource) {
  tcp_server sink(server_mode::sink_hash);
  fd_guard c{connect_tcp(sink.port(), 2s)};
  ASSERT_GE(c.fd, 0);
  const auto payload = deterministic_bytes(100'000, 3);
  ASSERT_TRUE(write_all(c.fd, payload, 5s));
  ::shutdown(c.fd, SHUT_WR);
  auto digest = read_exact(c.fd, 32, 5s);
  ASSERT_TRUE(digest);
  std::string hex;
  for (unsigned char b : *digest)
    hex += "0123456789abcdef"[b >> 4], hex += "0123456789abcdef"[b & 15];
  EXPECT_EQ(hex, sha256_hex(payload));

  tcp_server source(
      tcp_server_options{.mode = server_mode::source, .source_bytes = 12345, .source_seed = 9});
  fd_guard s{connect_tcp(source.port(), 2s)};
  ASSERT_GE(s.fd, 0);
  auto got = read_until_eof(s.fd, 5s, 20'000);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, deterministic_bytes(12345, 9));
}

TEST(HarnessNet, KnownDigestAndDeterministicBytes) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(deterministic_bytes(100, 1), deterministic_bytes(100, 1));
  EXPECT_NE(deterministic_bytes(100, 1), deterministic_bytes(100, 2));
  EXPECT_EQ(deterministic_bytes(13, 1), deterministic_bytes(100, 1).substr(0, 13));
}

TEST(HarnessNet, ManyConcurrentClientsOnV6) {
  tcp_server server(tcp_server_options{.mode = server_mode::echo, .host = "::1"});
  std::vector<fd_guard> clients;
  for (int i = 0; i < 50; ++i) {
    clients.emplace_back(connect_tcp(server.port(), 2s, "::1"));
    ASSERT_GE(clients.back().fd, 0);
  }
  for (auto& c : clients) ASSERT_TRUE(write_all(c.fd, std::string_view("ping"), 2s));
  for (auto& c : clients) EXPECT_EQ(read_exact(c.fd, 4, 2s), "ping");
  server.stop();  // aborts the open connections and joins their threads
  EXPECT_EQ(server.accepted(), 50u);
}

TEST(HarnessNet, ElevenHundredConnectionsAtOnce) {
  // Both ends live in this process: about 2200 descriptors.
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  if (lim.rlim_cur < 4096 && lim.rlim_max >= 4096) {
    lim.rlim_cur = 4096;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  if (lim.rlim_cur < 4096) GTEST_SKIP() << "open file limit too low";
  tcp_server server(server_mode::echo);
  std::vector<fd_guard> clients;
  for (int i = 0; i < 1100; ++i) {
    clients.emplace_back(connect_tcp(server.port(), 5s));
    ASSERT_GE(clients.back().fd, 0) << i << ": " << std::strerror(errno);
  }
  for (auto& c : clients) ASSERT_TRUE(write_all(c.fd, std::string_view("x"), 5s));
  for (auto& c : clients) ASSERT_EQ(read_exact(c.fd, 1, 5s), "x");
  EXPECT_EQ(server.accepted(), 1100u);
}

TEST(HarnessNet, RefusedAndTimeouts) {
  int port;
  {
    tcp_server gone(server_mode::echo);
    port = gone.port();
  }
  errno = 0;
  EXPECT_EQ(connect_tcp(static_cast<std::uint16_t>(port), 1s), -1);
  EXPECT_EQ(errno, ECONNREFUSED);

  tcp_server silent(tcp_server_options{.mode = server_mode::sink_hash});
  fd_guard c{connect_tcp(silent.port(), 2s)};
  ASSERT_GE(c.fd, 0);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(read_exact(c.fd, 1, 100ms));
  EXPECT_FALSE(read_until_eof(c.fd, 100ms, 10));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
}

TEST(HarnessProcess, ReadsLinesAndGroups) {
  auto p = child_process::start("sh", {"/bin/sh", "-c", "echo hello; sleep 0.1; echo port=42"});
  ASSERT_TRUE(p);
  auto hello = p->wait_for_line(std::regex("hello"), 5s);
  ASSERT_TRUE(hello);
  EXPECT_EQ(hello->line, "hello");
  auto port = p->wait_for_line(std::regex(R"(port=(\d+))"), 5s);
  ASSERT_TRUE(port);
  ASSERT_EQ(port->groups.size(), 2u);
  EXPECT_EQ(port->groups[1], "42");
  EXPECT_EQ(p->wait_exit(5s), 0);
  EXPECT_FALSE(p->running());
  EXPECT_EQ(p->output(), "hello\nport=42\n");
  EXPECT_EQ(p->line_count(), 2u);
  // Already seen lines still match; lines after the count do not include them.
  EXPECT_TRUE(p->wait_for_line(std::regex("hello"), 10ms));
  EXPECT_FALSE(p->wait_for_line_after(1, std::regex("hello"), 10ms));
  EXPECT_TRUE(p->wait_for_line_after(1, std::regex("port"), 10ms));
}

TEST(HarnessProcess, ExitCodesStderrAndEnvironment) {
  auto p = child_process::start("sh", {"/bin/sh", "-c", "echo \"v=$BURROW_TEST_X\" >&2; exit 3"},
                                {{"BURROW_TEST_X", "yes"}});
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->wait_for_line(std::regex("^v=yes$"), 5s));
  EXPECT_EQ(p->wait_exit(5s), 3);

  auto q = child_process::start("sleeper", {"/bin/sh", "-c", "echo ready; exec sleep 30"});
  ASSERT_TRUE(q);
  ASSERT_TRUE(q->wait_for_line(std::regex("ready"), 5s));
  EXPECT_TRUE(q->running());
  q->signal(SIGTERM);
  EXPECT_EQ(q->wait_exit(5s), 128 + SIGTERM);

  EXPECT_EQ(child_process::start("missing", {"/nonexistent/burrow"}), nullptr);
}

TEST(HarnessProcess, DeadlinesExpireQuickly) {
  auto p = child_process::start("quiet", {"/bin/sh", "-c", "sleep 30 & wait"});
  ASSERT_TRUE(p);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(p->wait_for_line(std::regex("never"), 100ms));
  EXPECT_FALSE(p->wait_exit(100ms));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  const pid_t pid = p->pid();
  p.reset();  // SIGKILLs the group (the shell and its sleep) and reaps the shell
  EXPECT_EQ(::kill(pid, 0), -1);
}

TEST(HarnessProcess, EndedOutputStopsWaitingEarly) {
  auto p = child_process::start("short", {"/bin/sh", "-c", "echo one"});
  ASSERT_TRUE(p);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(p->wait_for_line(std::regex("two"), 10s));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

}  // namespace
}  // namespace burrow::test
