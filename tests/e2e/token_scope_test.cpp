// Scoped agent tokens end to end: `burrow relay token add|list|revoke`, scope checks on claims,
// no claiming or taking over another token's names and ports, revocation closing links, SIGHUP
// narrowing a scope, and the bandwidth cap. Real relay and agent processes on 127.0.0.1.
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "e2e/tunnel_fixture.hpp"
#include "relay/token_file.hpp"

namespace burrow::test {
namespace {

std::string fmt_hex(unsigned char c) {
  static const char* digits = "0123456789abcdef";
  return {digits[c >> 4], digits[c & 15]};
}

struct issued {
  std::string id;
  std::string token;
  std::string output;
};

class token_test : public tunnel_test {
 protected:
  // `burrow relay token ARGS... --state-dir STATE`, run to completion.
  std::string run_token_command(std::vector<std::string> args, int expect_exit = 0) {
    std::vector<std::string> argv{BURROW_BINARY, "relay", "token"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--state-dir", state_dir_.string()});
    auto p = child_process::start("token", argv);
    EXPECT_TRUE(p);
    if (!p) return {};
    auto code = p->wait_exit(20s);
    EXPECT_EQ(code, expect_exit) << p->output();
    return p->output();
  }
  // With `relay`, waits until the running relay has read the new token.
  issued add_token(std::vector<std::string> scope, relay_process* relay = nullptr) {
    scope.insert(scope.begin(), "add");
    issued out;
    out.output = run_token_command(scope);
    std::smatch m;
    if (std::regex_search(out.output, m, std::regex(R"(token ([0-9a-f]{12}) added)")))
      out.id = m[1];
    if (std::regex_search(out.output, m, std::regex(R"((?:^|\n)(brw_[A-Za-z0-9_-]{43})\n)")))
      out.token = m[1];
    EXPECT_FALSE(out.id.empty()) << out.output;
    EXPECT_FALSE(out.token.empty()) << out.output;
    if (relay && !out.id.empty()) {
      EXPECT_TRUE(relay->proc->wait_for_line(std::regex("token " + out.id + " .* accepted"), 5s));
    }
    return out;
  }
  static std::vector<std::string> with_token(const issued& t, std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--token", t.token});
    return extra;
  }
  // Waits for the agent to report a refusal with `code` for `service`.
  static bool refused(child_process& agent, const std::string& service, const std::string& code) {
    return agent
        .wait_for_line(std::regex("refused service " + service + "[: ].*\\(" + code + "\\)"), 10s)
        .has_value();
  }
};

TEST_F(token_test, AddPrintsTheTokenOnceAndListNeverShowsIt) {
  auto t = add_token({"--label", "ci", "--names", "ci-*", "--ports", "20000-20010",
                      "--max-services", "2", "--bandwidth", "1M"});
  ASSERT_FALSE(t.token.empty());
  std::ifstream in(state_dir_ / "tokens.toml");
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(file.find(t.token), std::string::npos);
  EXPECT_NE(file.find(sha256_hex(t.token)), std::string::npos);

  auto list = run_token_command({"list"});
  EXPECT_NE(list.find(t.id), std::string::npos) << list;
  EXPECT_NE(list.find("ci-*"), std::string::npos) << list;
  EXPECT_NE(list.find("20000-20010"), std::string::npos) << list;
  EXPECT_EQ(list.find(t.token), std::string::npos);
  EXPECT_EQ(list.find("brw_"), std::string::npos);

  run_token_command({"revoke", t.id});
  EXPECT_EQ(run_token_command({"list"}).find(t.id), std::string::npos);
  run_token_command({"revoke", "nosuchid"}, 1);
  run_token_command({"add", "--names", "Bad Pattern"}, 1);
}

TEST_F(token_test, ScopedTokenClaimsWhatItMayAndIsRefusedTheRest) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  std::uint16_t allowed = free_port(), other = free_port();
  if (other == allowed) other = free_port();
  auto t = add_token({"--names", "ci-*", "--ports", std::to_string(allowed)}, &relay);
  ASSERT_FALSE(t.token.empty());

  auto good = start_e2ee_agent(relay, echo.port(), with_token(t, {"--name", "ci-web"}));
  EXPECT_EQ(good.service, "ci-web");
  auto bad =
      spawn_e2ee_agent(relay, std::to_string(echo.port()), with_token(t, {"--name", "prod-web"}));
  EXPECT_TRUE(refused(*bad, "prod-web", "not_allowed")) << bad->output();

  auto port_ok =
      start_agent(relay, echo.port(), with_token(t, {"--remote-port", std::to_string(allowed)}));
  EXPECT_EQ(port_ok.public_port, allowed);
  EXPECT_EQ(exchange(allowed, "scoped"), "scoped");
  auto port_bad = spawn_agent(relay, std::to_string(echo.port()),
                              with_token(t, {"--remote-port", std::to_string(other)}));
  EXPECT_TRUE(refused(*port_bad, "\\S+", "not_allowed")) << port_bad->output();
  EXPECT_TRUE(relay.proc->wait_for_line(std::regex("refused: this agent's token may not"), 5s));
}

TEST_F(token_test, AnotherTokenCannotClaimOrTakeOverNamesAndPorts) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto a = add_token({"--label", "a"}, &relay);
  auto b = add_token({"--label", "b"}, &relay);
  std::uint16_t port = free_port();

  auto a_name = start_e2ee_agent(relay, echo.port(), with_token(a, {"--name", "shared"}));
  auto a_port = start_agent(relay, echo.port(),
                            with_token(a, {"--remote-port", std::to_string(port), "--name", "p"}));
  ASSERT_EQ(a_port.public_port, port);

  auto b_name =
      spawn_e2ee_agent(relay, std::to_string(echo.port()), with_token(b, {"--name", "shared"}));
  EXPECT_TRUE(refused(*b_name, "shared", "name_in_use")) << b_name->output();
  auto b_port = spawn_agent(relay, std::to_string(echo.port()),
                            with_token(b, {"--remote-port", std::to_string(port), "--name", "p"}));
  EXPECT_TRUE(refused(*b_port, "p", "port_in_use")) << b_port->output();
  // Each refusal says what to change, and only that.
  EXPECT_TRUE(b_name->wait_for_line(std::regex("nothing to do. Pick another --name$"), 10s))
      << b_name->output();
  EXPECT_TRUE(b_port->wait_for_line(std::regex("nothing to do. Pick another --remote-port"), 10s))
      << b_port->output();
  b_name.reset();
  b_port.reset();

  // A's agents vanish: their name and port stay reserved for A through the grace period.
  a_name.proc->signal(SIGKILL);
  a_port.proc->signal(SIGKILL);
  ASSERT_TRUE(relay.proc->wait_for_line(std::regex("service shared: agent gone"), 15s));
  ASSERT_TRUE(
      relay.proc->wait_for_line(std::regex("port " + std::to_string(port) + ": agent gone"), 15s));
  auto b_name2 =
      spawn_e2ee_agent(relay, std::to_string(echo.port()), with_token(b, {"--name", "shared"}));
  EXPECT_TRUE(refused(*b_name2, "shared", "name_reserved")) << b_name2->output();
  auto b_port2 = spawn_agent(relay, std::to_string(echo.port()),
                             with_token(b, {"--remote-port", std::to_string(port), "--name", "p"}));
  EXPECT_TRUE(refused(*b_port2, "p", "port_reserved")) << b_port2->output();
  // A comes back and has both again.
  auto a_again = start_agent(relay, echo.port(),
                             with_token(a, {"--remote-port", std::to_string(port), "--name", "p"}));
  EXPECT_EQ(a_again.public_port, port);
}

TEST_F(token_test, MaxServicesCountsAcrossAgents) {
  tcp_server echo(server_mode::echo);
  auto relay = start_relay();
  auto t = add_token({"--max-services", "2"}, &relay);
  auto one = start_e2ee_agent(relay, echo.port(), with_token(t, {"--name", "one"}));
  auto two = start_agent(relay, echo.port(), with_token(t, {"--name", "two"}));
  ASSERT_NE(two.public_port, 0);
  auto three =
      spawn_e2ee_agent(relay, std::to_string(echo.port()), with_token(t, {"--name", "three"}));
  EXPECT_TRUE(refused(*three, "three", "too_many_services")) << three->output();
  EXPECT_TRUE(three->wait_for_line(std::regex("higher --max-services"), 10s)) << three->output();
  // A service whose agent left still counts while its grace runs, and the refusal says so.
  two.proc->signal(SIGKILL);
  ASSERT_TRUE(relay.proc->wait_for_line(std::regex(": agent gone"), 15s)) << relay.proc->output();
  auto four =
      spawn_e2ee_agent(relay, std::to_string(echo.port()), with_token(t, {"--name", "four"}));
  EXPECT_TRUE(four->wait_for_line(
      std::regex("holds 2 \\(1 of them kept for agents that left.*--grace.*too_many_services"),
      10s))
      << four->output();
  // The built-in token is not limited by another token's count.
  auto mine = start_e2ee_agent(relay, echo.port(), {"--name", "three"});
  EXPECT_EQ(mine.service, "three");
}

TEST_F(token_test, RevokeClosesItsLinksAndFreesItsNamesWhileOthersCarryOn) {
  tcp_server victim(server_mode::echo);
  tcp_server sink(tcp_server_options{.mode = server_mode::sink_hash});
  auto relay = start_relay();
  auto a = add_token({"--label", "leaving"}, &relay);
  auto b = add_token({"--label", "staying"}, &relay);
  auto a_agent = start_e2ee_agent(relay, victim.port(), with_token(a, {"--name", "a-svc"}));
  ASSERT_EQ(a_agent.service, "a-svc");
  auto b_agent = start_agent(relay, sink.port(), with_token(b, {"--name", "b-sink"}));
  ASSERT_NE(b_agent.public_port, 0);

  // B's transfer runs through the revocation of A.
  constexpr std::size_t size = 24u << 20;
  std::string payload = deterministic_bytes(size, 11);
  std::optional<std::string> hash;
  std::thread uploader([&] { hash = exchange(b_agent.public_port, payload, 120s); });
  std::this_thread::sleep_for(100ms);
  auto revoked_at = std::chrono::steady_clock::now();
  run_token_command({"revoke", a.id});
  EXPECT_TRUE(relay.proc->wait_for_line(
      std::regex("token " + a.id + " \\(leaving\\) revoked: closing its [1-9]"), 5s))
      << relay.proc->output();
  EXPECT_TRUE(a_agent.proc->wait_for_line(std::regex("revoked|bad_token|did not accept"), 5s));
  EXPECT_LT(std::chrono::steady_clock::now() - revoked_at, 6s);
  uploader.join();
  ASSERT_TRUE(hash);
  ASSERT_EQ(hash->size(), 32u);
  std::string hex;
  for (unsigned char c : *hash) hex += fmt_hex(c);
  EXPECT_EQ(hex, sha256_hex(payload));

  // A's name is free at once, with no grace: B may take it.
  auto b_takes = start_e2ee_agent(relay, victim.port(), with_token(b, {"--name", "a-svc"}));
  EXPECT_EQ(b_takes.service, "a-svc");
}

TEST_F(token_test, HangupWithANarrowedScopeReleasesOnlyWhatIsNoLongerAllowed) {
  tcp_server echo(server_mode::echo);
  auto config = dir_ / "relay.toml";
  { std::ofstream(config) << "grace = \"30s\"\n"; }
  auto relay = start_relay({"-c", config.string()});
  auto t = add_token({"--names", "a-*", "--names", "b-*"}, &relay);
  auto keep = start_e2ee_agent(relay, echo.port(), with_token(t, {"--name", "a-one"}));
  auto drop = start_e2ee_agent(relay, echo.port(), with_token(t, {"--name", "b-one"}));
  ASSERT_EQ(keep.service, "a-one");
  ASSERT_EQ(drop.service, "b-one");

  // Narrow the scope in the file, change the domain and a timeout, and send SIGHUP.
  auto lines = relay.proc->line_count();
  auto path = state_dir_ / "tokens.toml";
  auto file = relay::load_token_file(path);
  ASSERT_EQ(file.tokens.size(), 1u);
  file.tokens[0].scope.names = {"a-*"};
  relay::save_token_file(path, file);
  {
    std::ofstream(config) << "grace = \"5s\"\nhandshake-timeout = \"3s\"\n"
                             "domain = \"changed.localhost\"\n";
  }
  relay.proc->signal(SIGHUP);
  auto released = relay.proc->wait_for_line_after(
      lines,
      std::regex("token " + t.id + ": scope narrowed; released ports \\[\\] names \\[(.*)\\]"), 5s);
  ASSERT_TRUE(released) << relay.proc->output();
  EXPECT_EQ(released->groups[1], "b-one");
  EXPECT_TRUE(relay.proc->wait_for_line_after(
      lines, std::regex("domain changed; that needs a restart"), 5s));
  EXPECT_TRUE(relay.proc->wait_for_line_after(lines, std::regex("configuration reloaded"), 5s));
  EXPECT_TRUE(relay.proc->running());

  // a-one still works end to end; b-one is gone.
  auto visitor = start_connect(relay, keep);
  ASSERT_NE(visitor.port, 0);
  EXPECT_EQ(exchange_until_echoed(visitor.port, "still here", 10s), "still here");
  auto gone = spawn_connect(relay, "b-one", drop.pin, {"--listen", "127.0.0.1:0"});
  auto m = gone->wait_for_line(std::regex(R"(listening on 127\.0\.0\.1:(\d+) for )"), 10s);
  ASSERT_TRUE(m);
  auto reply = exchange(static_cast<std::uint16_t>(std::stoi(m->groups[1])), "x", 5s);
  EXPECT_NE(reply, std::optional<std::string>("x"));
}

TEST_F(token_test, BandwidthCapHoldsATransferToItsRate) {
  tcp_server sink(tcp_server_options{.mode = server_mode::sink_hash});
  auto relay = start_relay();
  auto t = add_token({"--bandwidth", "1M"}, &relay);
  auto agent = start_agent(relay, sink.port(), with_token(t, {"--name", "capped"}));
  ASSERT_NE(agent.public_port, 0);
  std::string payload = deterministic_bytes(2'000'000, 5);
  auto start = std::chrono::steady_clock::now();
  auto hash = exchange(agent.public_port, payload, 60s);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(hash);
  ASSERT_EQ(hash->size(), 32u);
  std::string hex;
  for (unsigned char c : *hash) hex += fmt_hex(c);
  EXPECT_EQ(hex, sha256_hex(payload));
  EXPECT_GE(elapsed, 1500ms);  // 2 MB at 1 MB/s; never assert an upper bound on speed
}

}  // namespace
}  // namespace burrow::test
