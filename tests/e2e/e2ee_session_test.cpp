// End-to-end session keys with real processes: one session per `burrow connect` and agent keys
// every connection, it survives an agent restart by making a new one, and it can be turned off.
#include <signal.h>

#include <iterator>
#include <regex>
#include <string>

#include "e2e/tunnel_fixture.hpp"

namespace burrow::test {
namespace e2ee_session_test {

std::size_t count_matches(const std::string& text, const std::regex& re) {
  return static_cast<std::size_t>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

const std::regex agent_session_opened(R"(end-to-end session [0-9a-f]{8} with visitor \S+ opened)");
const std::regex connect_session_open(R"(end-to-end session [0-9a-f]{8} with \S+ open\b)");

TEST_F(tunnel_test, OneSessionKeysEveryConnectionOfAConnect) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto agent = start_e2ee_agent(relay, echo.port(), {"--log-level", "debug"});
  auto visitor = start_connect(relay, agent, {"--log-level", "debug"});
  ASSERT_NE(visitor.port, 0);
  for (int i = 0; i < 20; ++i)
    ASSERT_EQ(exchange(visitor.port, "keyed " + std::to_string(i)), "keyed " + std::to_string(i));
  EXPECT_EQ(concurrent_echoes(visitor.port, 300), 300) << visitor.proc->output();
  ASSERT_TRUE(agent.proc->wait_for_line(agent_session_opened, 5s)) << agent.proc->output();
  EXPECT_EQ(count_matches(agent.proc->output(), agent_session_opened), 1u) << agent.proc->output();
  EXPECT_EQ(count_matches(visitor.proc->output(), connect_session_open), 1u)
      << visitor.proc->output();
  // Every connection was keyed from it: none was refused and none ran a handshake of its own.
  EXPECT_EQ(visitor.proc->output().find("running a handshake instead"), std::string::npos)
      << visitor.proc->output();
  EXPECT_EQ(visitor.proc->output().find("no end-to-end session"), std::string::npos);
}

TEST_F(tunnel_test, AfterTheAgentRestartsConnectMakesANewSession) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto first = start_e2ee_agent(relay, echo.port(), {"--log-level", "debug"});
  auto visitor = start_connect(relay, first, {"--log-level", "debug"});
  ASSERT_EQ(exchange(visitor.port, "before"), "before");
  ASSERT_TRUE(visitor.proc->wait_for_line(connect_session_open, 5s)) << visitor.proc->output();
  const std::size_t lines = visitor.proc->line_count();
  first.proc->signal(SIGKILL);
  first.proc->wait_exit(5s);

  auto second = start_e2ee_agent(relay, echo.port(), {"--log-level", "debug"});
  ASSERT_EQ(exchange_until_echoed(visitor.port, "after", 10s), "after") << visitor.proc->output();
  // From then on every connection works, keyed from a session with the new process.
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(exchange(visitor.port, "again " + std::to_string(i)), "again " + std::to_string(i));
  EXPECT_TRUE(visitor.proc->wait_for_line_after(lines, connect_session_open, 5s))
      << visitor.proc->output();
  EXPECT_TRUE(second.proc->wait_for_line(agent_session_opened, 5s)) << second.proc->output();
}

TEST_F(tunnel_test, AStreamOfAnExpiredSessionIsRefusedAndConnectMakesANewOne) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto agent = start_e2ee_agent(relay, echo.port(),
                                {"--e2ee-session-max-age", "2s", "--log-level", "debug"});
  auto visitor = start_connect(relay, agent, {"--log-level", "debug"});
  ASSERT_EQ(exchange(visitor.port, "fresh"), "fresh");
  ASSERT_TRUE(visitor.proc->wait_for_line(connect_session_open, 5s)) << visitor.proc->output();
  const std::size_t lines = visitor.proc->line_count();
  // At its max age the agent forgets the session, and its secret, with no connection to prompt
  // it. The session stream stays open: the next keyed open is refused, and that connection runs
  // a handshake of its own.
  ASSERT_TRUE(agent.proc->wait_for_line(
      std::regex(R"(end-to-end session [0-9a-f]{8} reached its max age \(2s\) and is forgotten)"),
      10s))
      << agent.proc->output();
  ASSERT_EQ(exchange(visitor.port, "expired"), "expired") << visitor.proc->output();
  EXPECT_TRUE(visitor.proc->wait_for_line_after(
      lines, std::regex(R"(refused \(no such service\); running a handshake instead)"), 5s))
      << visitor.proc->output();
  // Later connections are keyed from a new session.
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(exchange(visitor.port, "renewed " + std::to_string(i)),
              "renewed " + std::to_string(i));
  EXPECT_TRUE(visitor.proc->wait_for_line_after(lines, connect_session_open, 5s))
      << visitor.proc->output();
  EXPECT_EQ(count_matches(agent.proc->output(), agent_session_opened), 2u) << agent.proc->output();
  EXPECT_EQ(count_matches(visitor.proc->output(), std::regex("running a handshake instead")), 1u)
      << visitor.proc->output();

  auto wrong =
      spawn_e2ee_agent(relay, std::to_string(echo.port()), {"--e2ee-session-max-age", "0s"});
  EXPECT_EQ(wrong->wait_exit(10s), 1) << wrong->output();
  EXPECT_NE(wrong->output().find("e2ee-session-max-age (from --e2ee-session-max-age) must be"),
            std::string::npos)
      << wrong->output();
}

TEST_F(tunnel_test, SessionKeysFalseRunsAHandshakePerConnection) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto agent = start_e2ee_agent(relay, echo.port(), {"--log-level", "debug"});
  auto visitor = start_connect(relay, agent, {"--session-keys", "false", "--log-level", "debug"});
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(exchange(visitor.port, "tls " + std::to_string(i)), "tls " + std::to_string(i));
  EXPECT_EQ(count_matches(agent.proc->output(), agent_session_opened), 0u) << agent.proc->output();
  EXPECT_EQ(count_matches(visitor.proc->output(), connect_session_open), 0u);

  auto wrong = spawn_connect(relay, agent.service, agent.pin, {"--session-keys", "maybe"});
  EXPECT_EQ(wrong->wait_exit(10s), 1) << wrong->output();
  EXPECT_NE(wrong->output().find("session-keys 'maybe'"), std::string::npos) << wrong->output();
}

}  // namespace e2ee_session_test
}  // namespace burrow::test
