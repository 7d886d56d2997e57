// Everything the relay can be told: listeners, the public port range, timeouts and link limits.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "core/address.hpp"
#include "core/source_limits.hpp"
#include "link/encryption.hpp"
#include "link/limits.hpp"

namespace burrow::relay {

inline constexpr std::uint16_t default_agent_port = 7835;

struct relay_config {
  std::filesystem::path state_dir;
  // Scoped agent tokens besides STATE_DIR/agent.token; make_relay_config defaults it to
  // STATE_DIR/tokens.toml.
  std::filesystem::path tokens_file;
  std::vector<std::string> listen{"0.0.0.0:7835", "[::]:7835"};  // where agents connect
  std::vector<std::string> public_bind{"0.0.0.0", "::"};         // where public ports listen
  port_range ports{20000, 29999};
  std::string advertise;  // host shown in commands and public addresses; default: derived
  // HTTPS share URLs: https://NAME.DOMAIN, routed by the TLS ClientHello's SNI.
  std::string domain = "burrow.localhost";
  std::vector<std::string> https_listen{"0.0.0.0:443", "[::]:443"};
  bool https_listen_given = false;  // defaults that cannot be bound are skipped with a warning
  // Plain HTTP: routed by Host, redirected to HTTPS unless the service asks for plain HTTP.
  std::vector<std::string> http_listen{"0.0.0.0:80", "[::]:80"};
  bool http_listen_given = false;
  // Lifetime of the certificates the relay's CA signs for agents' share URLs (blind mode);
  // agents renew after two thirds of it.
  std::chrono::seconds share_cert_lifetime{24 * 3600};
  unsigned workers = 0;                    // 0: one per usable CPU
  std::chrono::milliseconds grace{30000};  // how long a gone agent's ports stay reserved
  std::chrono::milliseconds handshake_timeout{10000};
  std::chrono::milliseconds drain_timeout{10000};
  link::link_limits limits;
  // none: links whose dialer asks for it carry frames unencrypted after the welcome (private
  // networks only); tls: every link stays encrypted and such a request is refused.
  link::link_encryption link_encryption = link::link_encryption::tls;
  // Per source address, on every listener (agents, HTTPS, HTTP, public ports).
  source_limit_config source;
  // TCP keepalive on accepted connections: idle time before the first probe; 0: off.
  std::chrono::seconds tcp_keepalive{60};
  // Prometheus metrics at http://ADDRESS/metrics; empty: no listener.
  std::vector<std::string> metrics_listen;
};

}  // namespace burrow::relay
