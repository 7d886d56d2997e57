// The soak's tunnels: a real relay, agents and local services on loopback, each of which the
// fault injector can restart in place (same ports, same state directories).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "harness/http_service.hpp"
#include "harness/net.hpp"
#include "harness/process.hpp"

namespace burrow::soak {

using namespace std::chrono_literals;

// The size of what the download service sends on every connection.
inline constexpr std::size_t source_bytes = 4 << 20;
inline constexpr std::uint64_t source_seed = 77;

// Which local service (and the agent in front of it) a fault hits.
enum class service_kind { echo, sink, source, web, e2ee_echo };
inline constexpr service_kind all_services[] = {service_kind::echo, service_kind::sink,
                                                service_kind::source, service_kind::web,
                                                service_kind::e2ee_echo};
const char* name_of(service_kind k);

// Where visitors reach each tunnel; fixed for the whole run once everything has started.
struct endpoints {
  std::uint16_t echo = 0;     // public port of `burrow tcp --no-e2ee` in front of an echo server
  std::uint16_t sink = 0;     // ... of a server that answers the SHA-256 of what it read
  std::uint16_t source = 0;   // ... of a server that sends source_bytes and closes
  std::uint16_t https = 0;    // the relay's share URL port (web.burrow.localhost, blind mode)
  std::uint16_t connect = 0;  // `burrow connect` to an end-to-end echo service
  std::string web_host = "web.burrow.localhost";
  std::string web_ca;  // the relay CA as the web agent saved it, for curl --cacert
};

class cluster {
 public:
  cluster(std::string burrow, std::filesystem::path dir, unsigned workers);
  ~cluster();

  // Starts services, the relay, the agents and `burrow connect`; false (after printing why)
  // if any of them does not come up within its deadline.
  bool start();
  const endpoints& where() const { return where_; }

  // SIGTERM (the relay drains), then a new relay on the same ports and state directory. False
  // if the old relay did not exit within its drain deadline or the new one did not start.
  bool restart_relay();
  // SIGKILL the agent in front of `k` and start it again, asking for the same public port.
  bool kill_and_restart_agent(service_kind k);
  // Stops the local service behind `k` (its open connections are cut) and starts it again on
  // the same port after `down`.
  bool restart_service(service_kind k, std::chrono::milliseconds down);

  // True when every tunnel carries a small exchange, retrying until `limit`.
  bool wait_all_tunnels(std::chrono::milliseconds limit);

  pid_t relay_pid() const;
  // Names of processes that exited although no fault was acting on them.
  std::vector<std::string> unexpected_exits();

 private:
  struct agent {
    std::vector<std::string> argv;  // without --remote-port
    std::unique_ptr<test::child_process> proc;
    std::uint16_t public_port = 0;
  };
  bool start_relay();
  bool start_agent(service_kind k);
  bool start_service(service_kind k);
  bool probe(service_kind k);

  std::string burrow_;
  std::filesystem::path dir_;
  unsigned workers_;

  mutable std::mutex relay_mutex_;  // relay_ and its pid change while traffic threads run
  std::unique_ptr<test::child_process> relay_;
  static constexpr int public_port_count = 16;
  std::uint16_t agent_port_ = 0, http_port_ = 0, public_ports_ = 0;
  std::string fingerprint_, token_;

  std::unique_ptr<test::tcp_server> echo_, sink_, source_, e2ee_echo_;
  std::unique_ptr<test::http_service> web_;
  std::uint16_t echo_port_ = 0, sink_port_ = 0, source_port_ = 0, web_port_ = 0,
                e2ee_echo_port_ = 0;
  agent agents_[5];
  std::unique_ptr<test::child_process> connect_;
  std::string e2ee_service_, e2ee_pin_;
  endpoints where_;
};

}  // namespace burrow::soak
