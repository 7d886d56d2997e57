// What a blind share URL carries, end to end through relay and agent with real clients: keep-alive
// and pipelining, chunked and large bodies both ways, WebSocket and Server-Sent Events,
// X-Forwarded-*, the access-rule matrix and expiry.
#include <crypt.h>
#include <signal.h>

#include <fstream>
#include <thread>

#include "e2e/share_url_fixture.hpp"
#include "harness/http_service.hpp"

namespace burrow::test {
namespace {

class share_http_test : public share_url_test {
 protected:
  std::string ca() const { return (dir_ / "agent" / "relay-ca.pem").string(); }
  std::string url(const std::string& name, std::uint16_t port, const std::string& path) const {
    return "https://" + name + ".burrow.localhost:" + std::to_string(port) + path;
  }
  std::string resolve(const std::string& name, std::uint16_t port) const {
    return name + ".burrow.localhost:" + std::to_string(port) + ":127.0.0.1";
  }
  // A request's status code, via curl through the share URL.
  std::string status(const std::string& name, std::uint16_t port, std::vector<std::string> extra,
                     const std::string& path = "/headers") {
    auto out = curl(name + ".burrow.localhost", port, std::move(extra), path);
    if (!out) return "curl failed";
    auto at = out->rfind("status=");
    return at == std::string::npos ? *out : out->substr(at + 7, 3);
  }
};

TEST_F(share_http_test, KeepAliveBodiesOfAnySizeAndForwardedHeaders) {
  auto relay = start_relay();
  http_service service;
  std::uint16_t port = 0;
  auto agent = start_http_agent(relay, service.port(), "web", port, "blind");
  ASSERT_NE(port, 0);

  // Two requests on one connection: curl reuses it (0 new connections for the second).
  auto reused = run({"/usr/bin/curl", "-sS", "--max-time", "20", "--cacert", ca(), "--resolve",
                     resolve("web", port), "-o", "/dev/null", "-w", "%{num_connects} ",
                     url("web", port, "/headers"), "-o", "/dev/null", url("web", port, "/headers")},
                    30s);
  ASSERT_TRUE(reused);
  EXPECT_TRUE(reused->starts_with("1 0 ")) << *reused;
  auto seen = service.last_headers();
  EXPECT_EQ(seen["x-forwarded-for"], "127.0.0.1");
  EXPECT_EQ(seen["x-forwarded-proto"], "https");
  EXPECT_EQ(seen["x-forwarded-host"], "web.burrow.localhost:" + std::to_string(port));

  // 64 MiB up, with a length and chunked; 100 MiB down, with a length and chunked.
  std::string upload = deterministic_bytes(64 << 20, 3);
  std::ofstream(dir_ / "up.bin", std::ios::binary) << upload;
  std::string want = sha256_hex(upload) + " " + std::to_string(upload.size());
  for (std::vector<std::string> extra :
       {std::vector<std::string>{}, std::vector<std::string>{"-H", "Transfer-Encoding: chunked"}}) {
    std::vector<std::string> argv{"/usr/bin/curl", "-sS",
                                  "--max-time",    "60",
                                  "--cacert",      ca(),
                                  "--resolve",     resolve("web", port),
                                  "--data-binary", "@" + (dir_ / "up.bin").string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(url("web", port, "/sha256"));
    auto got = run(argv, 90s);
    ASSERT_TRUE(got);
    EXPECT_NE(got->find(want), std::string::npos) << *got;
  }
  std::uint64_t down = 100 << 20;
  for (std::string query : {"", "?chunked=1"}) {
    auto got = run(
        {"/bin/sh", "-c",
         "curl -sS --max-time 60 --cacert " + ca() + " --resolve " + resolve("web", port) + " '" +
             url("web", port, "/bytes/" + std::to_string(down) + query) + "' | sha256sum"},
        90s);
    ASSERT_TRUE(got);
    EXPECT_NE(got->find(pattern_sha256_hex(down)), std::string::npos) << query;
  }
}

// A long header line reaches the service whole in both modes; a head over the proxy's 64 KiB
// is answered 431 in both, not closed in silence.
TEST_F(share_http_test, LongHeadersPassAndHeadsOverTheLimitAre431InBothModes) {
  auto relay = start_relay();
  http_service service;
  std::uint16_t blind = 0, inspect = 0;
  auto a1 = start_http_agent(relay, service.port(), "longb", blind, "blind");
  auto a2 = start_http_agent(relay, service.port(), "longi", inspect, "inspect");
  ASSERT_NE(blind, 0);
  ASSERT_NE(inspect, 0);
  for (auto [name, port] : {std::pair{"longb", blind}, std::pair{"longi", inspect}}) {
    for (std::size_t size : {5000, 12000}) {
      const std::string value(size, 'v');
      EXPECT_EQ(status(name, port, {"--cacert", ca(), "-H", "X-Long: " + value}), "200")
          << name << " " << size;
      EXPECT_TRUE(service.last_headers()["x-long"] == value) << name << " " << size;
    }
    const std::string over(70000, 'v');
    EXPECT_EQ(status(name, port, {"--cacert", ca(), "-H", "X-Long: " + over}), "431") << name;
  }
}

TEST_F(share_http_test, PipelinedRequestsComeBackInOrder) {
  auto relay = start_relay();
  http_service service;
  std::uint16_t port = 0;
  auto agent = start_http_agent(relay, service.port(), "pipe", port, "blind");
  // Three requests in one write; the first is the slowest.
  std::string requests =
      "GET /slow?ms=300 HTTP/1.1\\r\\nHost: pipe\\r\\n\\r\\n"
      "GET /bytes/5 HTTP/1.1\\r\\nHost: pipe\\r\\n\\r\\n"
      "GET /close HTTP/1.1\\r\\nHost: pipe\\r\\n\\r\\n";
  auto out =
      run({"/bin/sh", "-c",
           "(printf '" + requests + "'; sleep 3) | openssl s_client -quiet -CAfile " + ca() +
               " -verify_return_error -servername pipe.burrow.localhost -connect 127.0.0.1:" +
               std::to_string(port) + " 2>/dev/null"},
          20s);
  ASSERT_TRUE(out);
  auto slow = out->find("slow");
  auto bytes = out->find("Content-Length: 5");
  auto closed = out->find("Connection: close");
  ASSERT_NE(slow, std::string::npos) << *out;
  ASSERT_NE(bytes, std::string::npos) << *out;
  ASSERT_NE(closed, std::string::npos) << *out;
  EXPECT_LT(slow, bytes);
  EXPECT_LT(bytes, closed);
}

TEST_F(share_http_test, WebSocketAndServerSentEventsPassThrough) {
  auto relay = start_relay();
  http_service service;
  std::uint16_t port = 0;
  auto agent = start_http_agent(relay, service.port(), "live", port, "blind");
  auto echoes = ws_echo_over_tls(port, "live.burrow.localhost", ca(),
                                 {"hello", std::string(200000, 'w'), "last"}, 15s);
  ASSERT_EQ(echoes.size(), 3u);
  EXPECT_EQ(echoes[0], "hello");
  EXPECT_EQ(echoes[1].size(), 200000u);
  EXPECT_EQ(echoes[2], "last");
  auto binary =
      ws_echo_over_tls(port, "live.burrow.localhost", ca(), {std::string("\0\1\2", 3)}, 15s, true);
  ASSERT_EQ(binary.size(), 1u);
  EXPECT_EQ(binary[0], std::string("\0\1\2", 3));

  // Events arrive as they are sent, not when the response ends.
  auto sse = child_process::start(
      "curl", {"/usr/bin/curl", "-sS", "-N", "--max-time", "20", "--cacert", ca(), "--resolve",
               resolve("live", port), url("live", port, "/sse?count=4&interval_ms=400")});
  ASSERT_TRUE(sse->wait_for_line(std::regex("data: event 0"), 10s)) << sse->output();
  auto first = std::chrono::steady_clock::now();
  ASSERT_TRUE(sse->wait_for_line(std::regex("data: event 3"), 10s)) << sse->output();
  EXPECT_GE(std::chrono::steady_clock::now() - first, 1000ms);
  EXPECT_EQ(sse->wait_exit(10s), 0);
}

std::string bcrypt_hash(const char* password) {
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  EXPECT_NE(crypt_gensalt_rn("$2b$", 5, nullptr, 0, setting, sizeof setting), nullptr);
  crypt_data data{};
  return crypt_r(password, setting, &data);
}

TEST_F(share_http_test, AccessRulesMatrix) {
  auto relay = start_relay();
  http_service service;
  std::string hash = bcrypt_hash("hashed-pass");
  std::uint16_t basic = 0, bearer = 0, header = 0, net = 0, both = 0;
  auto a1 = start_http_agent(relay, service.port(), "basic", basic, "blind",
                             {"--basic-auth", "alice:wonder,land", "--basic-auth", "bob:" + hash});
  auto a2 = start_http_agent(relay, service.port(), "bearer", bearer, "blind",
                             {"--bearer", "tok-123456"});
  auto a3 = start_http_agent(relay, service.port(), "header", header, "blind",
                             {"--require-header", "X-Team: blue"});
  auto a4 = start_http_agent(relay, service.port(), "net", net, "blind",
                             {"--allow-ip", "10.0.0.0/8", "--allow-ip", "2001:db8::/32"});
  auto a5 = start_http_agent(
      relay, service.port(), "both", both, "blind",
      {"--allow-ip", "127.0.0.0/8", "--allow-ip", "::1", "--bearer", "tok-123456"});
  std::vector<std::string> tls{"--cacert", ca()};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), tls.begin(), tls.end());
    return extra;
  };
  // Basic: none, wrong, right (a password with a comma), and a bcrypt-hashed one.
  auto challenge = curl("basic.burrow.localhost", basic, with({"-i"}), "/headers");
  ASSERT_TRUE(challenge);
  EXPECT_NE(challenge->find("WWW-Authenticate: Basic realm=\"basic.burrow.localhost"),
            std::string::npos)
      << *challenge;
  EXPECT_EQ(status("basic", basic, with({})), "401");
  EXPECT_EQ(status("basic", basic, with({"-u", "alice:wrong"})), "401");
  EXPECT_EQ(status("basic", basic, with({"-u", "alice:wonder,land"})), "200");
  EXPECT_EQ(status("basic", basic, with({"-u", "bob:hashed-pass"})), "200");
  EXPECT_EQ(status("basic", basic, with({"-u", "bob:hashed-pasS"})), "401");
  // Bearer.
  EXPECT_EQ(status("bearer", bearer, with({})), "401");
  EXPECT_EQ(status("bearer", bearer, with({"-H", "Authorization: Bearer nope"})), "401");
  EXPECT_EQ(status("bearer", bearer, with({"-H", "Authorization: Bearer tok-123456"})), "200");
  // Required header.
  EXPECT_EQ(status("header", header, with({})), "403");
  EXPECT_EQ(status("header", header, with({"-H", "X-Team: red"})), "403");
  EXPECT_EQ(status("header", header, with({"-H", "X-Team: blue"})), "200");
  // Networks: the visitor (127.0.0.1, as the relay saw it) is in neither.
  EXPECT_EQ(status("net", net, with({})), "403");
  // Both kinds at once: the address passes, the token must still be right.
  EXPECT_EQ(status("both", both, with({})), "401");
  EXPECT_EQ(status("both", both, with({"-H", "Authorization: Bearer tok-123456"})), "200");
  // Refused requests never reach the service, and no credential reaches a log.
  auto seen = service.last_headers();
  EXPECT_EQ(seen["authorization"], "Bearer tok-123456");
  for (auto* p : {&a1, &a2, &a3, &a4, &a5}) {
    auto out = (*p)->output();
    for (const char* secret : {"wonder", "hashed-pass", "tok-123456", "blue", hash.c_str()})
      EXPECT_EQ(out.find(secret), std::string::npos) << secret;
  }
  EXPECT_NE(a4->output().find("address not allowed"), std::string::npos) << a4->output();
  auto relay_log = relay.proc->output();
  for (const char* secret : {"wonder", "hashed-pass", "tok-123456"})
    EXPECT_EQ(relay_log.find(secret), std::string::npos) << secret;
}

// A visitor over IPv6: the relay listens on [::1] too, and the agent checks the visitor's IPv6
// address against IPv6 networks.
TEST_F(share_http_test, IPv6VisitorsAndIPv6AllowLists) {
  auto relay = start_relay({"--https-listen", "127.0.0.1:0", "--https-listen", "[::1]:0"});
  auto v6 = relay.proc->wait_for_line(std::regex(R"(served on \[::1\]:(\d+))"), 5s);
  if (!v6) GTEST_SKIP() << "no IPv6 loopback here: " << relay.proc->output();
  auto v6_port = static_cast<std::uint16_t>(std::stoi(v6->groups[1]));
  http_service service;
  std::uint16_t port = 0, other = 0;
  auto inside =
      start_http_agent(relay, service.port(), "six", port, "blind", {"--allow-ip", "::1/128"});
  auto outside = start_http_agent(relay, service.port(), "notsix", other, "blind",
                                  {"--allow-ip", "2001:db8::/32", "--allow-ip", "127.0.0.1"});
  auto over_v6 = [&](const std::string& name) {
    auto out =
        run({"/usr/bin/curl", "-sS", "--max-time", "10", "--cacert", ca(), "-o", "/dev/null", "-w",
             "%{http_code}", "--resolve",
             name + ".burrow.localhost:" + std::to_string(v6_port) + ":[::1]",
             "https://" + name + ".burrow.localhost:" + std::to_string(v6_port) + "/headers"},
            15s);
    std::string code = out.value_or("curl failed");
    while (!code.empty() && std::isspace(static_cast<unsigned char>(code.back()))) code.pop_back();
    return code;
  };
  EXPECT_EQ(over_v6("six"), "200");
  EXPECT_EQ(service.last_headers()["x-forwarded-for"], "::1");
  EXPECT_EQ(over_v6("notsix"), "403");
  // The same URLs over IPv4: the other way round.
  EXPECT_EQ(status("six", port, {"--cacert", ca()}), "403");
  EXPECT_EQ(status("notsix", other, {"--cacert", ca()}), "200");
}

TEST_F(share_http_test, IdleAndFixedExpiryReleaseTheName) {
  auto relay = start_relay();
  http_service service;
  std::uint16_t idle_port = 0, fixed_port = 0;
  auto idle =
      start_http_agent(relay, service.port(), "idle", idle_port, "blind", {"--idle-expiry", "3s"});
  auto fixed =
      start_http_agent(relay, service.port(), "fixed", fixed_port, "blind", {"--expire-in", "4s"});
  std::vector<std::string> tls{"--cacert", ca()};
  // Requests keep the idle one alive past its idle time.
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(status("idle", idle_port, tls), "200") << i;
    std::this_thread::sleep_for(1s);
  }
  ASSERT_TRUE(
      idle->wait_for_line(std::regex("share URL \\S+ expired \\(no request for 3s\\)"), 10s))
      << idle->output();
  ASSERT_TRUE(fixed->wait_for_line(std::regex("expired \\(expire-in 4s\\)"), 10s))
      << fixed->output();
  EXPECT_TRUE(relay.proc->wait_for_line(std::regex("service idle released by its agent"), 5s));
  EXPECT_TRUE(relay.proc->wait_for_line(std::regex("service fixed released by its agent"), 5s));
  auto gone = curl("idle.burrow.localhost", idle_port, {"--cacert", ca()}, "/headers");
  ASSERT_TRUE(gone);
  EXPECT_NE(gone->find("no tunnel named idle"), std::string::npos) << *gone;
  // With nothing left to serve, each agent stops by itself.
  EXPECT_EQ(idle->wait_exit(15s), 0);
  EXPECT_EQ(fixed->wait_exit(15s), 0);
}

TEST_F(share_http_test, UpServesAShareUrlWithRulesFromTheConfigFile) {
  auto relay = start_relay();
  http_service service;
  auto file = dir_ / "burrow.toml";
  std::ofstream(file) << "relay = \"127.0.0.1:" << relay.agent_port << "\"\n"
                      << "relay_pin = \"" << relay.fingerprint << "\"\n"
                      << "state_dir = \"" << (dir_ / "agent").string() << "\"\n"
                      << "[[service]]\nname = \"conf\"\nkind = \"http\"\nlocal = " << service.port()
                      << "\n"
                      << "basic_auth = [\"carol:a,b\", \"dave:x\"]\n"
                      << "allow_ip = [\"127.0.0.1\", \"::1\"]\n"
                      << "idle_expiry = \"1h\"\n";
  auto agent = child_process::start("agent", {BURROW_BINARY, "up", "-c", file.string()},
                                    {{"BURROW_TOKEN", relay.token}});
  auto m = agent->wait_for_line(std::regex(R"(is public at https://conf\.burrow\.localhost:(\d+))"),
                                10s);
  ASSERT_TRUE(m) << agent->output();
  auto port = static_cast<std::uint16_t>(std::stoi(m->groups[1]));
  std::vector<std::string> tls{"--cacert", ca()};
  EXPECT_EQ(status("conf", port, tls), "401");
  auto with = tls;
  with.insert(with.end(), {"-u", "carol:a,b"});
  EXPECT_EQ(status("conf", port, with), "200");
}

TEST_F(share_http_test, InspectModeChecksAndLogsEachRequestAtTheRelay) {
  auto relay = start_relay();
  http_service service;
  std::uint16_t port = 0;
  auto agent = start_http_agent(relay, service.port(), "insp", port, "inspect",
                                {"--bearer", "tok-987654", "--require-header", "X-Team: blue"});
  ASSERT_NE(port, 0);
  // Visitors trust the relay's own certificate: TLS ends there.
  std::vector<std::string> tls{"--cacert", (state_dir_ / "ca.pem").string()};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), tls.begin(), tls.end());
    return extra;
  };
  EXPECT_EQ(status("insp", port, with({"-H", "X-Team: blue"})), "401");
  EXPECT_EQ(status("insp", port, with({"-H", "Authorization: Bearer tok-987654"})), "403");
  EXPECT_EQ(
      status("insp", port, with({"-H", "Authorization: Bearer tok-987654", "-H", "X-Team: blue"})),
      "200");
  auto seen = service.last_headers();
  EXPECT_EQ(seen["x-forwarded-proto"], "https");
  EXPECT_EQ(seen["x-forwarded-for"], "127.0.0.1");
  // The relay logged every request, the refused ones with the reason, and no credential.
  EXPECT_TRUE(
      relay.proc->wait_for_line(std::regex("inspect insp: 127\\.0\\.0\\.1 GET /headers 200"), 5s))
      << relay.proc->output();
  EXPECT_TRUE(relay.proc->wait_for_line(std::regex("refused: missing or wrong bearer token"), 5s));
  auto relay_log = relay.proc->output();
  EXPECT_EQ(relay_log.find("tok-987654"), std::string::npos);
  EXPECT_EQ(relay_log.find("blue"), std::string::npos);
  // Upgrades pass in inspect mode too.
  auto ca = (state_dir_ / "ca.pem").string();
  EXPECT_THROW(ws_echo_over_tls(port, "insp.burrow.localhost", ca, {"x"}, 10s),
               std::runtime_error);  // no token: refused before the upgrade
}

}  // namespace
}  // namespace burrow::test
