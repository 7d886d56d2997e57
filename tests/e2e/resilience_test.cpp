// What happens when parts go away: relay restarts, agent deaths, a dead local service, graceful
// shutdown, SIGHUP, a replaced agent, and the agent's own errors (wrong token, wrong pin, refused
// port).
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "e2e/tunnel_fixture.hpp"

namespace burrow::test {
namespace {

// Empty when a visitor of `port` is turned away within `limit`: refused or reset outright, or
// accepted and closed with no data; otherwise what happened instead.
std::string refused_promptly(std::uint16_t port, std::chrono::milliseconds limit) {
  auto start = std::chrono::steady_clock::now();
  auto took = [&] {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - start)
                              .count()) +
           " ms";
  };
  int fd = connect_tcp(port, limit);
  if (fd < 0) {
    int err = errno;
    // Reset: the relay closed the port's listener (posted to its thread, so just after the log
    // line) while this connection sat completed in its backlog.
    if (err != ECONNREFUSED && err != ECONNRESET)
      return "connect failed: " + std::string(std::strerror(err));
    return std::chrono::steady_clock::now() - start < limit ? "" : "refused after " + took();
  }
  write_all(fd, "hello?", limit);
  auto got = read_until_eof(fd, limit, 1024);
  ::close(fd);
  if (got && !got->empty()) return "got " + std::to_string(got->size()) + " bytes back";
  return std::chrono::steady_clock::now() - start < limit ? "" : "closed after " + took();
}

TEST_F(tunnel_test, RelayRestartComesBackOnTheSamePortWithoutHelp) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto agent = start_agent(relay, echo.port());
  ASSERT_NE(agent.public_port, 0);
  ASSERT_EQ(exchange(agent.public_port, "before"), "before");

  relay.proc->signal(SIGKILL);
  relay.proc->wait_exit(5s);
  auto restarted = start_relay({}, relay.agent_port);
  ASSERT_EQ(restarted.agent_port, relay.agent_port);
  ASSERT_EQ(restarted.fingerprint, relay.fingerprint);  // same state directory, same identity

  EXPECT_EQ(exchange_until_echoed(agent.public_port, "after", 10s), "after")
      << agent.proc->output();
  EXPECT_TRUE(agent.proc->running());
}

TEST_F(tunnel_test, AgentKilledVisitorsAreRefusedPromptly) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto agent = start_agent(relay, echo.port());
  ASSERT_NE(agent.public_port, 0);
  ASSERT_EQ(exchange(agent.public_port, "x"), "x");
  agent.proc->signal(SIGKILL);
  agent.proc->wait_exit(5s);
  ASSERT_TRUE(relay.proc->wait_for_line(std::regex("agent gone; reserved"), 5s));
  EXPECT_EQ(refused_promptly(agent.public_port, 1s), "") << relay.proc->output();
  EXPECT_EQ(refused_promptly(agent.public_port, 1s), "");
}

TEST_F(tunnel_test, SighupIsLoggedAndIgnoredByTheAgent) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto agent = start_agent(relay, echo.port());
  ASSERT_NE(agent.public_port, 0);
  agent.proc->signal(SIGHUP);
  EXPECT_TRUE(agent.proc->wait_for_line(std::regex("received SIGHUP; ignored"), 10s))
      << agent.proc->output();
  agent.proc->signal(SIGHUP);
  EXPECT_FALSE(agent.proc->wait_exit(500ms).has_value()) << agent.proc->output();
  EXPECT_EQ(exchange(agent.public_port, "still here"), "still here");
  // SIGTERM still stops it, cleanly.
  agent.proc->signal(SIGTERM);
  EXPECT_EQ(agent.proc->wait_exit(15s), 0) << agent.proc->output();
}

TEST_F(tunnel_test, ReservedPortIsReclaimedByANewAgentWithTheSameToken) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto first = start_agent(relay, echo.port());
  ASSERT_NE(first.public_port, 0);
  first.proc->signal(SIGKILL);
  first.proc->wait_exit(5s);
  auto second =
      start_agent(relay, echo.port(), {"--remote-port", std::to_string(first.public_port)});
  EXPECT_EQ(second.public_port, first.public_port);
  EXPECT_EQ(exchange(second.public_port, "again"), "again");
}

TEST_F(tunnel_test, ARestartedAgentGetsItsAutoAssignedPortBack) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto first = start_agent(relay, echo.port());
  ASSERT_NE(first.public_port, 0);
  first.proc->signal(SIGTERM);
  ASSERT_EQ(first.proc->wait_exit(15s), 0) << first.proc->output();
  // No --remote-port: the port comes from the agent's state directory.
  auto second = start_agent(relay, echo.port());
  EXPECT_EQ(second.public_port, first.public_port) << second.proc->output();
  EXPECT_TRUE(second.proc->wait_for_line(
      std::regex("asking for port " + std::to_string(first.public_port) + " again"), 1s));
  EXPECT_EQ(exchange(second.public_port, "again"), "again");
  second.proc->signal(SIGTERM);
  ASSERT_EQ(second.proc->wait_exit(15s), 0) << second.proc->output();

  // A remembered port the relay no longer gives (here one below 1024): any other port instead.
  auto file = dir_ / "agent" / ("public-port.tcp-" + std::to_string(echo.port()));
  ASSERT_EQ(read_text_file(file), std::to_string(first.public_port));
  std::ofstream(file) << "80\n";
  auto third = start_agent(relay, echo.port());
  ASSERT_NE(third.public_port, 0) << third.proc->output();
  EXPECT_NE(third.public_port, 80);
  EXPECT_TRUE(third.proc->wait_for_line(std::regex("port 80 is no longer ours"), 1s))
      << third.proc->output();
  EXPECT_EQ(exchange(third.public_port, "elsewhere"), "elsewhere");
  EXPECT_EQ(read_text_file(file), std::to_string(third.public_port));
}

TEST_F(tunnel_test, AReplacedAgentIsToldAndStops) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  // A public port: the second agent asks for the port the first remembered.
  auto old_port = start_agent(relay, echo.port());
  ASSERT_NE(old_port.public_port, 0);
  auto new_port = start_agent(relay, echo.port());
  EXPECT_EQ(new_port.public_port, old_port.public_port);
  EXPECT_EQ(old_port.proc->wait_exit(10s), 1) << old_port.proc->output();
  EXPECT_NE(old_port.proc->output().find("taken over by a newer agent with the same token"),
            std::string::npos)
      << old_port.proc->output();
  EXPECT_EQ(exchange(new_port.public_port, "newest"), "newest");

  // An end-to-end name, the same way; an agent still holding another service keeps running.
  auto old_name = start_e2ee_agent(relay, echo.port(), {"--name", "shared-name"});
  ASSERT_EQ(old_name.service, "shared-name");
  auto new_name = start_e2ee_agent(relay, echo.port(), {"--name", "shared-name"});
  ASSERT_EQ(new_name.service, "shared-name");
  EXPECT_EQ(old_name.proc->wait_exit(10s), 1) << old_name.proc->output();
  EXPECT_TRUE(new_name.proc->running());
  EXPECT_TRUE(new_port.proc->running());
  auto visitor = start_connect(relay, new_name);
  ASSERT_NE(visitor.port, 0);
  EXPECT_EQ(exchange(visitor.port, "still newest"), "still newest");
}

TEST_F(tunnel_test, GracePeriodEndsAndThePortIsReleased) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay({"--grace", "300ms"});
  auto agent = start_agent(relay, echo.port());
  ASSERT_NE(agent.public_port, 0);
  agent.proc->signal(SIGKILL);
  agent.proc->wait_exit(5s);
  EXPECT_TRUE(
      relay.proc->wait_for_line(std::regex("port \\d+: released after its grace period"), 5s));
}

TEST_F(tunnel_test, LocalServiceDownClosesVisitorsAtOnceAndLogsOncePerBurst) {
  std::uint16_t dead = free_port();  // nothing listens here
  auto relay = start_relay();
  auto agent = start_agent(relay, dead);
  ASSERT_NE(agent.public_port, 0);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(refused_promptly(agent.public_port, 1s), "");
  std::this_thread::sleep_for(200ms);
  auto out = agent.proc->output();
  std::size_t count = 0;
  for (auto pos = out.find("is not answering"); pos != std::string::npos;
       pos = out.find("is not answering", pos + 1))
    ++count;
  EXPECT_EQ(count, 1u) << out;
}

TEST_F(tunnel_test, WrongTokenStopsTheAgentWithAClearMessage) {
  auto relay = start_relay();
  relay_process wrong = {nullptr, relay.agent_port, relay.fingerprint, "brw_not-the-token"};
  auto agent = spawn_agent(wrong, "1", {});
  auto code = agent->wait_exit(10s);
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 2);
  EXPECT_NE(agent->output().find("refused the token"), std::string::npos) << agent->output();
  EXPECT_EQ(agent->output().find("brw_not-the-token"), std::string::npos);  // never logged
  EXPECT_TRUE(relay.proc->wait_for_line(
      std::regex(R"(rejected \(bad_token\): the relay did not accept)"), 5s));
  EXPECT_EQ(relay.proc->output().find("brw_not-the-token"), std::string::npos);
}

TEST_F(tunnel_test, WrongPinStopsTheAgentAndShowsBothFingerprints) {
  auto relay = start_relay();
  std::string bogus = "sha256:" + std::string(64, 'a');
  relay_process wrong = {nullptr, relay.agent_port, bogus, relay.token};
  auto agent = spawn_agent(wrong, "1", {});
  auto code = agent->wait_exit(10s);
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 3);
  auto out = agent->output();
  EXPECT_NE(out.find(bogus), std::string::npos) << out;
  EXPECT_NE(out.find(relay.fingerprint), std::string::npos) << out;
  // It says how to check the relay, and never offers the presented certificate as the fix.
  EXPECT_NE(out.find("Check on the relay's own machine"), std::string::npos) << out;
  EXPECT_EQ(out.find("--relay-pin " + relay.fingerprint), std::string::npos) << out;
}

TEST_F(tunnel_test, PortTakenOnTheRelayHostIsRefusedInOneLine) {
  tcp_server squatter(server_mode::echo);  // holds the port on 127.0.0.1, the relay's public bind
  auto relay = start_relay();
  auto agent = spawn_agent(relay, "1", {"--remote-port", std::to_string(squatter.port())});
  auto code = agent->wait_exit(10s);
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 1);
  auto out = agent->output();
  EXPECT_NE(out.find("cannot listen on port " + std::to_string(squatter.port()) +
                     " for service tcp-1: Address already in use (port_unavailable)"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("[system:"), std::string::npos) << out;
  EXPECT_EQ(out.find("/usr/include"), std::string::npos) << out;
  EXPECT_NE(out.find("Pick another --remote-port"), std::string::npos) << out;
}

TEST_F(tunnel_test, ATokenGivenToTheWrongFlagIsNeverLogged) {
  auto relay = start_relay();
  // The token where the relay's address goes: every retry fails to resolve it.
  auto agent = child_process::start(
      "agent", {BURROW_BINARY, "tcp", "1", "--no-e2ee", "--relay", relay.token, "--relay-pin",
                relay.fingerprint, "--token", relay.token, "--backoff-max", "100ms", "--state-dir",
                (dir_ / "agent").string()});
  ASSERT_TRUE(agent);
  EXPECT_TRUE(agent->wait_for_line(std::regex("brw_\\[redacted\\]"), 10s)) << agent->output();
  agent->signal(SIGTERM);
  agent->wait_exit(10s);
  EXPECT_EQ(agent->output().find(relay.token), std::string::npos) << agent->output();
}

TEST_F(tunnel_test, RelayVerifiedByItsCaInsteadOfAPin) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto agent = child_process::start("agent",
                                    {BURROW_BINARY, "tcp", std::to_string(echo.port()), "--no-e2ee",
                                     "--relay", "127.0.0.1:" + std::to_string(relay.agent_port),
                                     "--relay-ca", (state_dir_ / "ca.pem").string()},
                                    {{"BURROW_TOKEN", relay.token}});
  auto pub = agent->wait_for_line(std::regex(R"(public at 127\.0\.0\.1:(\d+))"), 10s);
  ASSERT_TRUE(pub) << agent->output();
  EXPECT_EQ(exchange(static_cast<std::uint16_t>(std::stoi(pub->groups[1])), "ca"), "ca");
  // The system's CAs do not know this relay: without a pin or --relay-ca the agent stops.
  auto untrusting = child_process::start("agent",
                                         {BURROW_BINARY, "tcp", "1", "--no-e2ee", "--relay",
                                          "127.0.0.1:" + std::to_string(relay.agent_port)},
                                         {{"BURROW_TOKEN", relay.token}});
  EXPECT_EQ(untrusting->wait_exit(10s), 3);
  EXPECT_NE(untrusting->output().find("cannot verify the relay's certificate"), std::string::npos)
      << untrusting->output();
}

TEST_F(tunnel_test, RelayUnreachableKeepsRetryingAndSaysSo) {
  relay_process nowhere = {nullptr, free_port(), "sha256:" + std::string(64, 'b'), "brw_x"};
  auto agent = spawn_agent(nowhere, "1", {});
  EXPECT_TRUE(agent->wait_for_line(std::regex("unreachable: Connection refused; retrying"), 5s));
  std::this_thread::sleep_for(500ms);
  EXPECT_TRUE(agent->running());
}

TEST_F(tunnel_test, PortOutsideTheRangeIsRefusedWithTheReason) {
  auto relay = start_relay({"--port-range", "40000-40010"});
  auto agent = spawn_agent(relay, "1", {"--remote-port", "50000"});
  auto code = agent->wait_exit(10s);
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 1);
  EXPECT_NE(agent->output().find("outside the relay's public range 40000-40010"), std::string::npos)
      << agent->output();
}

TEST_F(tunnel_test, ChosenRemotePortIsUsed) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  std::uint16_t want = free_port();
  auto agent = start_agent(relay, echo.port(), {"--remote-port", std::to_string(want)});
  EXPECT_EQ(agent.public_port, want);
  EXPECT_EQ(exchange(want, "chosen"), "chosen");
}

TEST_F(tunnel_test, GracefulRelayShutdownFinishesAnInFlightTransfer) {
  constexpr std::size_t size = 32u << 20;
  tcp_server source(
      tcp_server_options{.mode = server_mode::source, .source_bytes = size, .source_seed = 11});
  auto relay = start_relay();
  auto agent = start_agent(relay, source.port());
  ASSERT_NE(agent.public_port, 0);
  int fd = connect_tcp(agent.public_port, 5s);
  ASSERT_GE(fd, 0);
  auto first = read_exact(fd, 1 << 20, 10s);  // the transfer is under way
  ASSERT_TRUE(first);
  relay.proc->signal(SIGTERM);
  auto rest = read_until_eof(fd, 30s, size);
  ::close(fd);
  ASSERT_TRUE(rest);
  EXPECT_EQ(first->size() + rest->size(), size);
  EXPECT_EQ(sha256_hex(*first + *rest), sha256_hex(deterministic_bytes(size, 11)));
  EXPECT_EQ(relay.proc->wait_exit(15s), 0);
}

TEST_F(tunnel_test, AgentInterruptDrainsAndExitsCleanly) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto agent = start_agent(relay, echo.port());
  ASSERT_NE(agent.public_port, 0);
  int fd = connect_tcp(agent.public_port, 5s);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(write_all(fd, "ping", 5s));
  ASSERT_EQ(read_exact(fd, 4, 5s), "ping");
  agent.proc->signal(SIGINT);
  // The open stream still works while the agent drains.
  ASSERT_TRUE(write_all(fd, "pong", 5s));
  ::shutdown(fd, SHUT_WR);
  EXPECT_EQ(read_until_eof(fd, 5s, 1024), "pong");
  ::close(fd);
  EXPECT_EQ(agent.proc->wait_exit(15s), 0);
}

}  // namespace
}  // namespace burrow::test
