// Starting, killing and restarting the soak's processes and services.
#include "cluster.hpp"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

namespace burrow::soak {
namespace {

using test::child_process;

std::uint16_t port_of(const test::line_match& m) {
  return static_cast<std::uint16_t>(std::stoi(m.groups[1]));
}

// `count` consecutive ports free on 127.0.0.1, below the kernel's ephemeral range (32768 and up
// here): a port the kernel chose could be handed to some client socket while its listener is
// down for a restart, and the restart would then fail with EADDRINUSE.
std::uint16_t pick_ports(int count) {
  std::random_device rd;
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const auto base = static_cast<std::uint16_t>(10000 + rd() % (32000 - 10000 - count));
    bool all_free = true;
    for (int i = 0; i < count && all_free; ++i) {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<std::uint16_t>(base + i));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      all_free = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
      ::close(fd);
    }
    if (all_free) return base;
  }
  return 0;
}

std::size_t index_of(service_kind k) {
  return static_cast<std::size_t>(k);
}

// One exchange through a tunnel, short deadline: what a probe after a fault needs.
bool echoes(std::uint16_t port) {
  const std::string msg = test::deterministic_bytes(512, port);
  int fd = test::connect_tcp(port, 2s);
  if (fd < 0) return false;
  bool ok = test::write_all(fd, msg, 2s);
  ::shutdown(fd, SHUT_WR);
  auto back = ok ? test::read_until_eof(fd, 2s, 4096) : std::nullopt;
  ::close(fd);
  return back == msg;
}

}  // namespace

const char* name_of(service_kind k) {
  switch (k) {
    case service_kind::echo:
      return "echo";
    case service_kind::sink:
      return "sink";
    case service_kind::source:
      return "source";
    case service_kind::web:
      return "web";
    case service_kind::e2ee_echo:
      return "e2ee-echo";
  }
  return "?";
}

cluster::cluster(std::string burrow, std::filesystem::path dir, unsigned workers)
    : burrow_(std::move(burrow)), dir_(std::move(dir)), workers_(workers) {}

cluster::~cluster() {
  // Visitors' helpers and agents first, so the relay does not log their loss as news.
  connect_.reset();
  for (auto& a : agents_) a.proc.reset();
  std::lock_guard lock(relay_mutex_);
  relay_.reset();
}

bool cluster::start() {
  echo_port_ = pick_ports(1);
  sink_port_ = pick_ports(1);
  source_port_ = pick_ports(1);
  web_port_ = pick_ports(1);
  e2ee_echo_port_ = pick_ports(1);
  agent_port_ = pick_ports(1);
  where_.https = pick_ports(1);
  http_port_ = pick_ports(1);
  public_ports_ = pick_ports(public_port_count);
  for (auto k : all_services)
    if (!start_service(k)) return false;
  if (!start_relay()) return false;
  for (auto k : all_services)
    if (!start_agent(k)) return false;
  connect_ = child_process::start(
      "connect", {burrow_, "connect", e2ee_service_, "--relay",
                  "127.0.0.1:" + std::to_string(agent_port_), "--relay-pin", fingerprint_, "--pin",
                  e2ee_pin_, "--backoff-max", "500ms", "--listen", "127.0.0.1:0"});
  if (!connect_) return false;
  auto m = connect_->wait_for_line(std::regex(R"(listening on 127\.0\.0\.1:(\d+) for )"), 15s);
  if (!m) {
    std::fprintf(stderr, "soak: burrow connect did not start\n");
    return false;
  }
  where_.connect = port_of(*m);
  where_.echo = agents_[index_of(service_kind::echo)].public_port;
  where_.sink = agents_[index_of(service_kind::sink)].public_port;
  where_.source = agents_[index_of(service_kind::source)].public_port;
  where_.web_ca = (dir_ / "agent-web" / "relay-ca.pem").string();
  return wait_all_tunnels(15s);
}

bool cluster::start_service(service_kind k) {
  try {
    switch (k) {
      case service_kind::echo:
        echo_ = std::make_unique<test::tcp_server>(
            test::tcp_server_options{.mode = test::server_mode::echo, .port = echo_port_});
        echo_port_ = echo_->port();
        break;
      case service_kind::sink:
        sink_ = std::make_unique<test::tcp_server>(
            test::tcp_server_options{.mode = test::server_mode::sink_hash, .port = sink_port_});
        sink_port_ = sink_->port();
        break;
      case service_kind::source:
        source_ = std::make_unique<test::tcp_server>(
            test::tcp_server_options{.mode = test::server_mode::source,
                                     .source_bytes = source_bytes,
                                     .source_seed = source_seed,
                                     .port = source_port_});
        source_port_ = source_->port();
        break;
      case service_kind::web:
        web_ = std::make_unique<test::http_service>(
            test::http_service_options{.port = web_port_, .threads = 2});
        web_port_ = web_->port();
        break;
      case service_kind::e2ee_echo:
        e2ee_echo_ = std::make_unique<test::tcp_server>(
            test::tcp_server_options{.mode = test::server_mode::echo, .port = e2ee_echo_port_});
        e2ee_echo_port_ = e2ee_echo_->port();
        break;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "soak: cannot start the %s service: %s\n", name_of(k), e.what());
    return false;
  }
  return true;
}

bool cluster::restart_service(service_kind k, std::chrono::milliseconds down) {
  switch (k) {
    case service_kind::echo:
      echo_.reset();
      break;
    case service_kind::sink:
      sink_.reset();
      break;
    case service_kind::source:
      source_.reset();
      break;
    case service_kind::web:
      web_.reset();
      break;
    case service_kind::e2ee_echo:
      e2ee_echo_.reset();
      break;
  }
  std::this_thread::sleep_for(down);
  for (int attempt = 0; attempt < 20; ++attempt) {
    if (start_service(k)) return true;
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

bool cluster::start_relay() {
  std::vector<std::string> argv{
      burrow_, "relay", "--state-dir", (dir_ / "relay").string(), "--listen",
      "127.0.0.1:" + std::to_string(agent_port_), "--public-bind", "127.0.0.1", "--port-range", "0",
      "--https-listen", "127.0.0.1:" + std::to_string(where_.https), "--http-listen",
      "127.0.0.1:" + std::to_string(http_port_), "--workers", std::to_string(workers_),
      // Restarts drain in-flight streams; a short drain keeps the
      // fault windows short.
      "--drain-timeout", "3s",
      // The soak's own visitors are a load test from 127.0.0.1 (hundreds of new connections a
      // second), so the rate limit is off; the open-connection limit stays on, low enough that
      // the flood from 127.0.0.2 (400 held) runs into it while 127.0.0.1 (a few dozen) never does.
      "--source-rate", "0", "--source-connections", "256"};
  auto relay = child_process::start("relay", argv);
  if (!relay) return false;
  auto port = relay->wait_for_line(std::regex(R"(agents connect to 127\.0\.0\.1:(\d+))"), 15s);
  auto https =
      relay->wait_for_line(std::regex(R"(share URLs \S+ served on 127\.0\.0\.1:(\d+))"), 5s);
  auto http =
      relay->wait_for_line(std::regex(R"(plain HTTP for \S+ served on 127\.0\.0\.1:(\d+))"), 5s);
  auto fp = relay->wait_for_line(std::regex(R"(relay fingerprint: (sha256:[0-9a-f]{64}))"), 5s);
  if (!port || !https || !http || !fp) {
    std::fprintf(stderr, "soak: the relay did not start\n");
    return false;
  }
  agent_port_ = port_of(*port);
  where_.https = port_of(*https);
  http_port_ = port_of(*http);
  fingerprint_ = fp->groups[1];
  token_ = test::read_text_file(dir_ / "relay" / "agent.token");
  std::lock_guard lock(relay_mutex_);
  relay_ = std::move(relay);
  return true;
}

bool cluster::restart_relay() {
  std::unique_ptr<child_process> old;
  {
    std::lock_guard lock(relay_mutex_);
    old = std::move(relay_);
  }
  old->signal(SIGTERM);
  // --drain-timeout 3s, plus time to close everything.
  auto code = old->wait_exit(15s);
  bool ok = true;
  if (!code) {
    std::fprintf(stderr, "soak: FAIL the relay did not exit within 15 s of SIGTERM\n");
    ok = false;
  } else if (*code != 0) {
    std::fprintf(stderr, "soak: FAIL the relay exited with %d after SIGTERM\n", *code);
    ok = false;
  }
  old.reset();
  return start_relay() && ok;
}

bool cluster::start_agent(service_kind k) {
  auto& a = agents_[index_of(k)];
  if (a.argv.empty()) {
    const auto state = (dir_ / ("agent-" + std::string(name_of(k)))).string();
    const std::string relay = "127.0.0.1:" + std::to_string(agent_port_);
    auto common = [&](std::vector<std::string> argv) {
      argv.insert(argv.end(), {"--relay", relay, "--relay-pin", fingerprint_, "--state-dir", state,
                               "--backoff-max", "500ms"});
      return argv;
    };
    switch (k) {
      case service_kind::echo:
        a.argv = common({burrow_, "tcp", std::to_string(echo_port_), "--no-e2ee"});
        break;
      case service_kind::sink:
        a.argv = common({burrow_, "tcp", std::to_string(sink_port_), "--no-e2ee"});
        break;
      case service_kind::source:
        a.argv = common({burrow_, "tcp", std::to_string(source_port_), "--no-e2ee"});
        break;
      case service_kind::web:
        a.argv = common(
            {burrow_, "http", std::to_string(web_port_), "--name", "web", "--mode", "blind"});
        break;
      case service_kind::e2ee_echo:
        a.argv = common({burrow_, "tcp", std::to_string(e2ee_echo_port_), "--name", "soak"});
        break;
    }
  }
  auto argv = a.argv;
  if (a.public_port != 0) argv.insert(argv.end(), {"--remote-port", std::to_string(a.public_port)});
  a.proc =
      child_process::start(std::string("agent-") + name_of(k), argv, {{"BURROW_TOKEN", token_}});
  if (!a.proc) return false;
  std::optional<test::line_match> m;
  switch (k) {
    case service_kind::web:
      m = a.proc->wait_for_line(std::regex(R"(is public at https://web\.burrow\.localhost:(\d+))"),
                                15s);
      break;
    case service_kind::e2ee_echo:
      m = a.proc->wait_for_line(
          std::regex(R"(reachable end to end as (\S+) \(certificate (sha256:[0-9a-f]{64})\))"),
          15s);
      if (m) {
        e2ee_service_ = m->groups[1];
        e2ee_pin_ = m->groups[2];
      }
      break;
    default:
      m = a.proc->wait_for_line(std::regex(R"(public at 127\.0\.0\.1:(\d+))"), 15s);
      if (m) a.public_port = port_of(*m);
      break;
  }
  if (!m) std::fprintf(stderr, "soak: the %s agent did not come up\n", name_of(k));
  return m.has_value();
}

bool cluster::kill_and_restart_agent(service_kind k) {
  auto& a = agents_[index_of(k)];
  a.proc->signal(SIGKILL);
  a.proc->wait_exit(5s);
  a.proc.reset();
  return start_agent(k);
}

bool cluster::probe(service_kind k) {
  switch (k) {
    case service_kind::echo:
      return echoes(where_.echo);
    case service_kind::e2ee_echo:
      return echoes(where_.connect);
    case service_kind::sink: {
      int fd = test::connect_tcp(where_.sink, 2s);
      if (fd < 0) return false;
      ::shutdown(fd, SHUT_WR);
      auto hash = test::read_until_eof(fd, 2s, 64);
      ::close(fd);
      return hash && hash->size() == 32;
    }
    case service_kind::source: {
      int fd = test::connect_tcp(where_.source, 2s);
      if (fd < 0) return false;
      static const std::string expected =
          test::deterministic_bytes(source_bytes, source_seed).substr(0, 1024);
      auto first = test::read_exact(fd, 1024, 2s);
      ::close(fd);
      return first == expected;
    }
    case service_kind::web: {
      auto curl = child_process::start(
          "probe-curl",
          {"/usr/bin/curl", "-sS", "--max-time", "3", "-o", "/dev/null", "-w",
           "status=%{http_code}", "--cacert", where_.web_ca, "--resolve",
           where_.web_host + ":" + std::to_string(where_.https) + ":127.0.0.1",
           "https://" + where_.web_host + ":" + std::to_string(where_.https) + "/bytes/16"});
      if (!curl) return false;
      auto code = curl->wait_exit(5s);
      return code == 0 && curl->output().find("status=200") != std::string::npos;
    }
  }
  return false;
}

bool cluster::wait_all_tunnels(std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (auto k : all_services) {
    while (!probe(k)) {
      if (std::chrono::steady_clock::now() >= until) {
        std::fprintf(stderr, "soak: the %s tunnel did not come back within %lld ms\n", name_of(k),
                     static_cast<long long>(limit.count()));
        return false;
      }
      std::this_thread::sleep_for(100ms);
    }
  }
  return true;
}

pid_t cluster::relay_pid() const {
  std::lock_guard lock(relay_mutex_);
  return relay_ ? relay_->pid() : -1;
}

std::vector<std::string> cluster::unexpected_exits() {
  std::vector<std::string> gone;
  {
    std::lock_guard lock(relay_mutex_);
    if (relay_ && !relay_->running()) gone.push_back("relay");
  }
  for (auto k : all_services) {
    auto& a = agents_[index_of(k)];
    if (a.proc && !a.proc->running()) gone.push_back(std::string("agent-") + name_of(k));
  }
  if (connect_ && !connect_->running()) gone.push_back("connect");
  return gone;
}

}  // namespace burrow::soak
