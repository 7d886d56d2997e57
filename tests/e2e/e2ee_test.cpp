// End-to-end encrypted TCP: `burrow connect` to an agent through the relay, real processes.
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <fstream>

#include "e2e/tunnel_fixture.hpp"
#include "tls/certs.hpp"

namespace burrow::test {
namespace {

std::string to_hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

TEST_F(tunnel_test, EndToEndEchoWithHalfClose) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto agent = start_e2ee_agent(relay, echo.port());
  ASSERT_FALSE(agent.service.empty());
  // The printed visitor command is complete (relay, both pins, a listen address that cannot
  // clash) and works as printed, on the agent's own host too.
  auto cmd = agent.proc->wait_for_line(
      std::regex(R"(visitors run: burrow connect (\S+) --relay (127\.0\.0\.1:\d+) --relay-pin )"
                 R"((sha256:[0-9a-f]+) --pin (sha256:[0-9a-f]{64}) --listen 127\.0\.0\.1:0$)"),
      5s);
  ASSERT_TRUE(cmd) << agent.proc->output();
  EXPECT_EQ(cmd->groups[1], agent.service);
  EXPECT_EQ(cmd->groups[4], agent.pin);
  auto visitor =
      child_process::start("connect", {BURROW_BINARY, "connect", cmd->groups[1], "--relay",
                                       cmd->groups[2], "--relay-pin", cmd->groups[3], "--pin",
                                       cmd->groups[4], "--listen", "127.0.0.1:0"});
  ASSERT_TRUE(visitor);
  auto listening = visitor->wait_for_line(std::regex(R"(listening on 127\.0\.0\.1:(\d+))"), 10s);
  ASSERT_TRUE(listening) << visitor->output();
  auto port = static_cast<std::uint16_t>(std::stoi(listening->groups[1]));
  EXPECT_EQ(exchange(port, "hello end to end"), "hello end to end");
  // No public port was opened for it.
  EXPECT_EQ(agent.proc->output().find("is public at"), std::string::npos);
}

TEST_F(tunnel_test, EndToEndHundredMiBEachWayWithChecksums) {
  constexpr std::size_t size = 100u << 20;
  tcp_server sink(tcp_server_options{.mode = server_mode::sink_hash});
  tcp_server source(
      tcp_server_options{.mode = server_mode::source, .source_bytes = size, .source_seed = 9});
  auto relay = start_relay();
  auto up = start_e2ee_agent(relay, sink.port(), {"--name", "sink"});
  auto down = start_e2ee_agent(relay, source.port(), {"--name", "source"});
  ASSERT_EQ(up.service, "sink");
  ASSERT_EQ(up.pin, down.pin);  // one agent state directory, one key
  auto up_visitor = start_connect(relay, up);
  auto down_visitor = start_connect(relay, down);
  ASSERT_NE(up_visitor.port, 0);
  ASSERT_NE(down_visitor.port, 0);

  std::string payload = deterministic_bytes(size, 4);
  std::optional<std::string> upload_hash, download;
  std::thread uploader([&] { upload_hash = exchange(up_visitor.port, payload, 180s); });
  std::thread downloader([&] { download = exchange(down_visitor.port, "", 180s); });
  uploader.join();
  downloader.join();
  ASSERT_TRUE(upload_hash);
  EXPECT_EQ(to_hex(*upload_hash), sha256_hex(payload));
  ASSERT_TRUE(download);
  ASSERT_EQ(download->size(), size);
  EXPECT_EQ(sha256_hex(*download), sha256_hex(deterministic_bytes(size, 9)));
}

TEST_F(tunnel_test, WrongPinRefusesTheConnectionShowsBothFingerprintsAndSendsNothing) {
  tcp_server echo(tcp_server_options{.mode = server_mode::echo, .record_prefix = 64});
  auto relay = start_relay();
  auto agent = start_e2ee_agent(relay, echo.port());
  std::string wrong = "sha256:" + std::string(64, 'a');
  auto visitor = spawn_connect(relay, agent.service, wrong, {"--listen", "127.0.0.1:0"});
  auto m = visitor->wait_for_line(std::regex(R"(listening on 127\.0\.0\.1:(\d+))"), 10s);
  ASSERT_TRUE(m) << visitor->output();
  auto port = static_cast<std::uint16_t>(std::stoi(m->groups[1]));
  auto reply = exchange(port, "secret that must not arrive", 10s);
  EXPECT_TRUE(!reply || reply->empty());
  auto err = visitor->wait_for_line(std::regex("presented certificate (sha256:[0-9a-f]{64}) but "
                                               "--pin expects (sha256:[0-9a-f]{64})"),
                                    5s);
  ASSERT_TRUE(err) << visitor->output();
  EXPECT_EQ(err->groups[1], agent.pin);
  EXPECT_EQ(err->groups[2], wrong);
  for (auto& prefix : echo.received_prefixes()) EXPECT_EQ(prefix, "");

  // With --stdio the same mistake ends the process with exit code 3.
  auto once = spawn_connect(relay, agent.service, wrong, {"--stdio"});
  EXPECT_EQ(once->wait_exit(15s), 3) << once->output();
}

TEST_F(tunnel_test, AgentRestartKeepsItsKeyNameAndFingerprint) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto first = start_e2ee_agent(relay, echo.port());
  auto visitor = start_connect(relay, first);
  ASSERT_EQ(exchange(visitor.port, "before"), "before");
  first.proc->signal(SIGKILL);
  first.proc->wait_exit(5s);

  auto second = start_e2ee_agent(relay, echo.port());
  EXPECT_EQ(second.pin, first.pin);
  EXPECT_EQ(second.service, first.service);
  // The visitor's own `connect`, still running with the old pin, reaches the new process.
  EXPECT_EQ(exchange_until_echoed(visitor.port, "after", 10s), "after") << visitor.proc->output();
}

TEST_F(tunnel_test, ConnectComesBackOnItsOwnAfterARelayRestart) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto agent = start_e2ee_agent(relay, echo.port());
  auto visitor = start_connect(relay, agent);
  ASSERT_EQ(exchange(visitor.port, "before"), "before");

  relay.proc->signal(SIGKILL);
  relay.proc->wait_exit(5s);
  auto restarted = start_relay({}, relay.agent_port);
  ASSERT_EQ(restarted.agent_port, relay.agent_port);

  EXPECT_EQ(exchange_until_echoed(visitor.port, "after", 15s), "after") << visitor.proc->output();
  EXPECT_TRUE(visitor.proc->running());
}

TEST_F(tunnel_test, ThousandConnectionsAtOnceThroughOneConnect) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto agent = start_e2ee_agent(relay, echo.port());
  auto visitor = start_connect(relay, agent);
  ASSERT_NE(visitor.port, 0);
  EXPECT_EQ(concurrent_echoes(visitor.port, 1000), 1000) << visitor.proc->output();
}

// The relay joins each visitor's stream to the agent's with no coroutine (link::stream::join):
// on one thread the bytes go straight from link to link, across two they cross by posts. Visitors
// who finish, and visitors who vanish with an RST mid-exchange, must each leave the relay with
// nothing open, and the service must go on answering.
class relay_threads_test : public tunnel_test, public testing::WithParamInterface<const char*> {};

TEST_P(relay_threads_test, ForgetsEveryEndToEndVisitorWhoLeaves) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay({"--workers", GetParam(), "--metrics-listen", "127.0.0.1:0"});
  ASSERT_NE(relay.metrics_port, 0);
  // One agent link and two of connect's: on a relay with two threads, the relay's accepts take
  // turns between them, so one of connect's links lands where the agent's link is not.
  auto agent = start_e2ee_agent(relay, echo.port(), {"--links", "1"});
  auto visitor = start_connect(relay, agent, {"--links", "2"});
  ASSERT_NE(visitor.port, 0);
  EXPECT_EQ(concurrent_echoes(visitor.port, 200), 200) << visitor.proc->output();
  for (int i = 0; i < 20; ++i) {
    int fd = connect_tcp(visitor.port, 5s);
    ASSERT_GE(fd, 0);
    // An echo first, so the pair is joined and carrying; then the RST, on a quiet pair or
    // behind bytes still on their way.
    EXPECT_TRUE(write_all(fd, "ping", 5s));
    EXPECT_EQ(read_exact(fd, 4, 5s), std::optional<std::string>("ping"));
    if (i % 2) {
      std::string more = deterministic_bytes(64 * 1024, static_cast<std::uint64_t>(i));
      EXPECT_TRUE(write_all(fd, more, 5s));
    }
    struct linger rst {
      1, 0
    };
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &rst, sizeof rst);
    ::close(fd);
  }
  // One stream stays: connect's session stream, from which the visitors' streams were keyed.
  EXPECT_EQ(wait_for_metric(relay.metrics_port, "burrow_relay_streams", 1, 10s), 1)
      << "streams still open at the relay 10 s after the last visitor left";
  EXPECT_EQ(exchange(visitor.port, "still here"), "still here");
}

INSTANTIATE_TEST_SUITE_P(Workers, relay_threads_test, testing::Values("1", "2"),
                         [](const auto& info) { return std::string(info.param) + "_threads"; });

TEST_F(tunnel_test, VisitorTokenIsAskedAndGuessedNamesLeadNowhere) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto agent = start_e2ee_agent(relay, echo.port(), {"--visitor-token", "vt-right-token"});

  // Without the token, and with a wrong one: refused by the relay, with the reason.
  auto without = spawn_connect(relay, agent.service, agent.pin, {"--stdio"});
  EXPECT_EQ(without->wait_exit(15s), 1);
  EXPECT_NE(without->output().find("asks for a visitor token"), std::string::npos)
      << without->output();
  auto wrong = spawn_connect(relay, agent.service, agent.pin, {"--stdio"},
                             {{"BURROW_VISITOR_TOKEN", "vt-wrong-token"}});
  EXPECT_EQ(wrong->wait_exit(15s), 1);
  EXPECT_NE(wrong->output().find("visitor token for " + agent.service + " is not right"),
            std::string::npos)
      << wrong->output();
  // A guessed name: no such service.
  auto guessed = spawn_connect(relay, "tcp-22-deadbeef", agent.pin, {"--stdio"});
  EXPECT_EQ(guessed->wait_exit(15s), 1);
  EXPECT_NE(guessed->output().find("no service named tcp-22-deadbeef"), std::string::npos)
      << guessed->output();
  // No token ever reaches a log.
  EXPECT_EQ(relay.proc->output().find("vt-"), std::string::npos);
  EXPECT_EQ(agent.proc->output().find("vt-right"), std::string::npos);

  // The right token: through.
  auto visitor = start_connect(relay, agent, {"--visitor-token", "vt-right-token"});
  EXPECT_EQ(exchange(visitor.port, "let me in"), "let me in");
  EXPECT_EQ(echo.accepted(), 1u);  // the refused ones never reached the service
}

TEST_F(tunnel_test, ConnectOpensMoreLinksWhenItsLinksAreFull) {
  tcp_server echo(server_mode::echo);
  // Eight streams per link: connect's one link fills up and it must open more.
  auto relay = start_relay({"--max-streams", "8"});
  auto agent = start_e2ee_agent(relay, echo.port(), {"--links", "3"});
  auto visitor = start_connect(relay, agent, {"--links", "1", "--max-links", "4"});
  ASSERT_NE(visitor.port, 0);
  constexpr int held = 20;  // more than one link takes, fewer than the agent's 3 x 8
  std::vector<int> fds;
  for (int i = 0; i < held; ++i) {
    int fd = connect_tcp(visitor.port, 10s);
    ASSERT_GE(fd, 0);
    std::string msg = "held " + std::to_string(i);
    ASSERT_TRUE(write_all(fd, msg, 10s));
    // Each answers while all stay open, so every one holds a stream.
    auto got = read_exact(fd, msg.size(), 20s);
    ASSERT_TRUE(got) << "connection " << i << "\n" << visitor.proc->output();
    EXPECT_EQ(*got, msg);
    fds.push_back(fd);
  }
  for (int fd : fds) ::close(fd);
  EXPECT_TRUE(visitor.proc->wait_for_line(std::regex("link [1-3] connected"), 5s))
      << visitor.proc->output();
}

TEST_F(tunnel_test, AgentUsesTheUsersOwnEndToEndCertificate) {
  tcp_server echo(server_mode::echo);
  auto pair = tls::make_self_signed("my agent", {"agent.example"}, std::chrono::hours(24));
  auto cert = dir_ / "mine.crt";
  auto key = dir_ / "mine.key";
  std::ofstream(cert) << pair.cert_pem;
  std::ofstream(key) << pair.key_pem;
  auto relay = start_relay();
  auto agent = start_e2ee_agent(relay, echo.port(),
                                {"--e2ee-cert", cert.string(), "--e2ee-key", key.string()});
  EXPECT_EQ(agent.pin, tls::fingerprint_sha256(pair.cert_pem));
  auto visitor = start_connect(relay, agent);
  EXPECT_EQ(exchange(visitor.port, "own key"), "own key");
  // Nothing was written to the state directory: the user's pair is used as it is.
  EXPECT_FALSE(std::filesystem::exists(dir_ / "agent" / "e2ee.key"));
}

TEST_F(tunnel_test, UpExposesEndToEndServicesWithAVisitorTokenFromTheFile) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto file = dir_ / "burrow.toml";
  std::ofstream(file) << "relay = \"127.0.0.1:" << relay.agent_port << "\"\n"
                      << "relay_pin = \"" << relay.fingerprint << "\"\n"
                      << "state_dir = \"" << (dir_ / "agent").string() << "\"\n\n"
                      << "[[service]]\nname = \"db\"\nlocal = " << echo.port()
                      << "\nvisitor_token = \"db-visitor-token\"\n";
  auto up = child_process::start("up", {BURROW_BINARY, "up", "-c", file.string()},
                                 {{"BURROW_TOKEN", relay.token}});
  auto m = up->wait_for_line(
      std::regex(R"(reachable end to end as db \(certificate (sha256:[0-9a-f]{64})\))"), 10s);
  ASSERT_TRUE(m) << up->output();
  e2ee_agent_process agent{nullptr, "db", m->groups[1]};
  auto refused = spawn_connect(relay, "db", agent.pin, {"--stdio"});
  EXPECT_EQ(refused->wait_exit(15s), 1);
  auto visitor = start_connect(relay, agent, {"--visitor-token", "db-visitor-token"});
  EXPECT_EQ(exchange(visitor.port, "from the file"), "from the file");
}

}  // namespace
}  // namespace burrow::test
