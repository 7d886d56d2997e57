// End-to-end fixture implementation.
#include "e2e/tunnel_fixture.hpp"

#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

namespace burrow::test {

std::string fetch_metrics(std::uint16_t port) {
  int fd = connect_tcp(port, 5s);
  if (fd < 0) return {};
  std::optional<std::string> reply;
  if (write_all(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 5s))
    reply = read_until_eof(fd, 5s, 1 << 22);
  ::close(fd);
  return reply.value_or("");
}

double metric_value(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ')
      return std::stod(line.substr(series.size() + 1));
  return -1;
}

double wait_for_metric(std::uint16_t port, const std::string& series, double want,
                       std::chrono::milliseconds deadline) {
  double value = -1;
  for (auto until = std::chrono::steady_clock::now() + deadline;;) {
    value = metric_value(fetch_metrics(port), series);
    if (value == want || std::chrono::steady_clock::now() >= until) return value;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void tunnel_test::SetUp() {
  // 1,000-connection tests need more descriptors than the usual soft limit; children inherit it.
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, 65536);
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  std::random_device rd;
  dir_ = std::filesystem::temp_directory_path() /
         ("burrow-e2e-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
  std::filesystem::create_directories(dir_);
  state_dir_ = dir_ / "relay";
  sanitizer_reports_at_start_ = child_process::sanitizer_reports();
}

void tunnel_test::TearDown() {
  // The test's children have ended by now; a race or leak they reported fails this test (the
  // sanitizer_check environment catches reports from other fixtures at the end of the run).
  EXPECT_EQ(child_process::sanitizer_reports(), sanitizer_reports_at_start_)
      << "a child process printed a sanitizer report (see its [name]-tagged output)";
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

relay_process tunnel_test::start_relay(std::vector<std::string> extra, std::uint16_t agent_port,
                                       std::map<std::string, std::string> env) {
  relay_process r;
  std::vector<std::string> argv{BURROW_BINARY,   "relay",
                                "--state-dir",   state_dir_.string(),
                                "--listen",      "127.0.0.1:" + std::to_string(agent_port),
                                "--public-bind", "127.0.0.1"};
  if (std::find(extra.begin(), extra.end(), "--workers") == extra.end())
    extra.insert(extra.end(), {"--workers", "2"});
  if (std::find(extra.begin(), extra.end(), "--port-range") == extra.end())
    extra.insert(extra.end(), {"--port-range", "0"});
  // Share URLs on a loopback port of the kernel's choosing, never the machine's 443.
  if (std::find(extra.begin(), extra.end(), "--https-listen") == extra.end())
    extra.insert(extra.end(), {"--https-listen", "127.0.0.1:0"});
  if (std::find(extra.begin(), extra.end(), "--http-listen") == extra.end())
    extra.insert(extra.end(), {"--http-listen", "127.0.0.1:0"});
  argv.insert(argv.end(), extra.begin(), extra.end());
  r.proc = child_process::start("relay", argv, std::move(env));
  auto port = r.proc->wait_for_line(std::regex(R"(agents connect to 127\.0\.0\.1:(\d+))"), 10s);
  EXPECT_TRUE(port) << r.proc->output();
  if (!port) return r;
  r.agent_port = static_cast<std::uint16_t>(std::stoi(port->groups[1]));
  auto https =
      r.proc->wait_for_line(std::regex(R"(share URLs \S+ served on 127\.0\.0\.1:(\d+))"), 1s);
  if (https) r.https_port = static_cast<std::uint16_t>(std::stoi(https->groups[1]));
  auto http =
      r.proc->wait_for_line(std::regex(R"(plain HTTP for \S+ served on 127\.0\.0\.1:(\d+))"), 1s);
  if (http) r.http_port = static_cast<std::uint16_t>(std::stoi(http->groups[1]));
  if (std::find(extra.begin(), extra.end(), "--metrics-listen") != extra.end()) {
    auto m =
        r.proc->wait_for_line(std::regex(R"(metrics at http://127\.0\.0\.1:(\d+)/metrics)"), 10s);
    EXPECT_TRUE(m) << r.proc->output();
    if (m) r.metrics_port = static_cast<std::uint16_t>(std::stoi(m->groups[1]));
  }
  auto fp = r.proc->wait_for_line(std::regex(R"(relay fingerprint: (sha256:[0-9a-f]{64}))"), 10s);
  EXPECT_TRUE(fp);
  if (fp) r.fingerprint = fp->groups[1];
  r.token = read_text_file(state_dir_ / "agent.token");
  return r;
}

std::unique_ptr<child_process> tunnel_test::spawn_agent(const relay_process& relay,
                                                        std::string target,
                                                        std::vector<std::string> extra) {
  extra.insert(extra.begin(), "--no-e2ee");
  return spawn_e2ee_agent(relay, std::move(target), std::move(extra));
}

std::unique_ptr<child_process> tunnel_test::spawn_e2ee_agent(const relay_process& relay,
                                                             std::string target,
                                                             std::vector<std::string> extra) {
  std::vector<std::string> argv{BURROW_BINARY,
                                "tcp",
                                std::move(target),
                                "--relay",
                                "127.0.0.1:" + std::to_string(relay.agent_port),
                                "--relay-pin",
                                relay.fingerprint,
                                "--backoff-max",
                                "500ms",
                                "--state-dir",
                                (dir_ / "agent").string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return child_process::start("agent", argv, {{"BURROW_TOKEN", relay.token}});
}

e2ee_agent_process tunnel_test::start_e2ee_agent(const relay_process& relay, std::uint16_t target,
                                                 std::vector<std::string> extra) {
  e2ee_agent_process a;
  a.proc = spawn_e2ee_agent(relay, std::to_string(target), std::move(extra));
  auto m = a.proc->wait_for_line(
      std::regex(R"(reachable end to end as (\S+) \(certificate (sha256:[0-9a-f]{64})\))"), 10s);
  EXPECT_TRUE(m) << a.proc->output();
  if (!m) return a;
  a.service = m->groups[1];
  a.pin = m->groups[2];
  return a;
}

std::unique_ptr<child_process> tunnel_test::spawn_connect(const relay_process& relay,
                                                          const std::string& service,
                                                          const std::string& pin,
                                                          std::vector<std::string> extra,
                                                          std::map<std::string, std::string> env) {
  std::vector<std::string> argv{BURROW_BINARY,
                                "connect",
                                service,
                                "--relay",
                                "127.0.0.1:" + std::to_string(relay.agent_port),
                                "--relay-pin",
                                relay.fingerprint,
                                "--pin",
                                pin,
                                "--backoff-max",
                                "500ms"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return child_process::start("connect", argv, std::move(env));
}

connect_process tunnel_test::start_connect(const relay_process& relay,
                                           const e2ee_agent_process& agent,
                                           std::vector<std::string> extra) {
  connect_process c;
  extra.insert(extra.begin(), {"--listen", "127.0.0.1:0"});
  c.proc = spawn_connect(relay, agent.service, agent.pin, std::move(extra));
  auto m = c.proc->wait_for_line(std::regex(R"(listening on 127\.0\.0\.1:(\d+) for )"), 10s);
  EXPECT_TRUE(m) << c.proc->output();
  if (m) c.port = static_cast<std::uint16_t>(std::stoi(m->groups[1]));
  return c;
}

agent_process tunnel_test::start_agent(const relay_process& relay, std::uint16_t target,
                                       std::vector<std::string> extra) {
  agent_process a;
  a.proc = spawn_agent(relay, std::to_string(target), std::move(extra));
  auto m = a.proc->wait_for_line(std::regex(R"(public at 127\.0\.0\.1:(\d+))"), 10s);
  EXPECT_TRUE(m) << a.proc->output();
  if (m) a.public_port = static_cast<std::uint16_t>(std::stoi(m->groups[1]));
  return a;
}

std::optional<std::string> tunnel_test::exchange(std::uint16_t port, std::string_view data,
                                                 std::chrono::milliseconds deadline) {
  int fd = connect_tcp(port, deadline);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> out;
  if (write_all(fd, data, deadline)) {
    ::shutdown(fd, SHUT_WR);
    out = read_until_eof(fd, deadline, 1 << 30);
  }
  ::close(fd);
  return out;
}

void tunnel_test::check_bystander(std::uint16_t port) {
  std::string payload = deterministic_bytes(4u << 20, 21);
  auto back = exchange(port, payload, 30s);
  ASSERT_TRUE(back);
  EXPECT_EQ(sha256_hex(*back), sha256_hex(payload));
}

std::optional<std::string> tunnel_test::exchange_until_echoed(std::uint16_t port,
                                                              const std::string& data,
                                                              std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  std::optional<std::string> reply;
  while (std::chrono::steady_clock::now() < deadline) {
    reply = exchange(port, data, 3s);
    if (reply == data) break;
    std::this_thread::sleep_for(50ms);
  }
  return reply;
}

int tunnel_test::concurrent_echoes(std::uint16_t port, int visitors) {
  std::atomic<int> ok{0};
  // Every connection is open at once before any of them finishes. The threads wait on a
  // condition, not a polling loop: a thousand threads waking every few milliseconds would take
  // the CPU from the relay and agent under test, and under a sanitizer starve them.
  std::mutex mutex;
  std::condition_variable all_tried;
  int tried = 0;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(visitors));
  for (int i = 0; i < visitors; ++i) {
    threads.emplace_back([&, i] {
      std::string msg = deterministic_bytes(1024, static_cast<std::uint64_t>(i));
      int fd = connect_tcp(port, 30s);
      {
        std::unique_lock lock(mutex);
        if (++tried == visitors) all_tried.notify_all();
        all_tried.wait_until(lock, std::chrono::steady_clock::now() + 30s,
                             [&] { return tried == visitors; });
      }
      if (fd < 0) return;
      bool good = write_all(fd, msg, 60s);
      ::shutdown(fd, SHUT_WR);
      auto back = good ? read_until_eof(fd, 60s, 4096) : std::nullopt;
      ::close(fd);
      if (back && *back == msg) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  return ok.load();
}

}  // namespace burrow::test
