// Links that go quiet are found and redialled; IPv6 listeners work end to end; JSON logs parse.
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <sstream>
#include <thread>

#include "e2e/tunnel_fixture.hpp"

namespace burrow::test {
namespace {

TEST_F(tunnel_test, HalfOpenLinkIsFoundByPingsAndRedialled) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay({"--ping-interval", "300ms", "--ping-timeout", "300ms"});
  auto agent = start_agent(relay, echo.port());
  ASSERT_NE(agent.public_port, 0);
  // A frozen relay answers no pings: to the agent its links are half-open.
  auto mark = agent.proc->line_count();
  relay.proc->signal(SIGSTOP);
  auto lost = agent.proc->wait_for_line_after(mark, std::regex("lost: peer silent"), 5s);
  relay.proc->signal(SIGCONT);
  ASSERT_TRUE(lost) << agent.proc->output();
  // Once the relay thaws, the agent is back on its own.
  auto deadline = std::chrono::steady_clock::now() + 10s;
  std::optional<std::string> reply;
  while (std::chrono::steady_clock::now() < deadline && reply != "alive") {
    reply = exchange(agent.public_port, "alive", 2s);
    if (reply != "alive") std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(reply, "alive");
}

TEST_F(tunnel_test, IPv6ListenersAndTarget) {
  tcp_server echo(tcp_server_options{.mode = server_mode::echo, .host = "::1"});
  relay_process relay;
  relay.proc = child_process::start(
      "relay", {BURROW_BINARY, "relay", "--state-dir", state_dir_.string(), "--https-listen",
                "[::1]:0", "--listen", "[::1]:0", "--public-bind", "::1", "--port-range", "0"});
  auto port = relay.proc->wait_for_line(std::regex(R"(agents connect to \[::1\]:(\d+))"), 10s);
  ASSERT_TRUE(port) << relay.proc->output();
  auto fp =
      relay.proc->wait_for_line(std::regex(R"(relay fingerprint: (sha256:[0-9a-f]{64}))"), 5s);
  ASSERT_TRUE(fp);
  auto token = relay.proc->wait_for_line(std::regex(R"(--token (brw_\S+))"), 5s);
  ASSERT_TRUE(token);
  auto agent = child_process::start(
      "agent",
      {BURROW_BINARY, "tcp", "[::1]:" + std::to_string(echo.port()), "--no-e2ee", "--relay",
       "[::1]:" + port->groups[1], "--relay-pin", fp->groups[1]},
      {{"BURROW_TOKEN", token->groups[1]}});
  auto pub = agent->wait_for_line(std::regex(R"(public at \[::1\]:(\d+))"), 10s);
  ASSERT_TRUE(pub) << agent->output();
  int fd = connect_tcp(static_cast<std::uint16_t>(std::stoi(pub->groups[1])), 5s, "::1");
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(write_all(fd, "six", 5s));
  ::shutdown(fd, SHUT_WR);
  EXPECT_EQ(read_until_eof(fd, 5s, 100), "six");
  ::close(fd);
}

TEST_F(tunnel_test, JsonLogsAreOneObjectPerLineWithoutSecrets) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay({"--log-format", "json"});
  auto agent = start_agent(relay, echo.port(), {"--log-format", "json"});
  ASSERT_NE(agent.public_port, 0);
  ASSERT_EQ(exchange(agent.public_port, "j"), "j");
  relay.proc->signal(SIGTERM);
  relay.proc->wait_exit(15s);
  std::istringstream lines(relay.proc->output() + agent.proc->output());
  int parsed = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '{') continue;  // the printed banner is not a log line
    boost::system::error_code ec;
    auto v = boost::json::parse(line, ec);
    ASSERT_FALSE(ec) << line;
    ASSERT_TRUE(v.is_object()) << line;
    EXPECT_TRUE(v.as_object().contains("level"));
    EXPECT_TRUE(v.as_object().contains("msg"));
    EXPECT_EQ(line.find(relay.token), std::string::npos) << line;
    ++parsed;
  }
  EXPECT_GT(parsed, 4);
}

}  // namespace
}  // namespace burrow::test
