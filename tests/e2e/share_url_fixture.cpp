// The share URL fixture's helpers.
#include "e2e/share_url_fixture.hpp"

namespace burrow::test {

using namespace std::chrono_literals;

std::optional<std::string> share_url_test::run(std::vector<std::string> argv,
                                               std::chrono::milliseconds limit) {
  auto r = run_program(std::move(argv), limit);
  if (r.code != 0) return std::nullopt;
  return r.output;
}

std::optional<std::string> share_url_test::curl(const std::string& host, std::uint16_t port,
                                                std::vector<std::string> extra,
                                                const std::string& path) {
  std::vector<std::string> argv{"/usr/bin/curl",
                                "-sS",
                                "--max-time",
                                "20",
                                "--resolve",
                                host + ":" + std::to_string(port) + ":127.0.0.1",
                                "-w",
                                "\nstatus=%{http_code}\n"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("https://" + host + ":" + std::to_string(port) + path);
  return run(argv, 30s);
}

std::unique_ptr<child_process> share_url_test::start_http_agent(
    const relay_process& relay, std::uint16_t port, const std::string& name,
    std::uint16_t& share_port, const std::string& mode, std::vector<std::string> extra) {
  std::vector<std::string> argv{BURROW_BINARY,
                                "http",
                                std::to_string(port),
                                "--name",
                                name,
                                "--mode",
                                mode,
                                "--relay",
                                "127.0.0.1:" + std::to_string(relay.agent_port),
                                "--relay-pin",
                                relay.fingerprint,
                                "--state-dir",
                                (dir_ / "agent").string(),
                                "--backoff-max",
                                "500ms"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto a = child_process::start("agent", std::move(argv), {{"BURROW_TOKEN", relay.token}});
  auto m =
      a->wait_for_line(std::regex("http 127\\.0\\.0\\.1:" + std::to_string(port) +
                                  " is public at https://" + name + R"(\.burrow\.localhost:(\d+))"),
                       10s);
  EXPECT_TRUE(m) << a->output();
  if (m) share_port = static_cast<std::uint16_t>(std::stoi(m->groups[1]));
  return a;
}

}  // namespace burrow::test
