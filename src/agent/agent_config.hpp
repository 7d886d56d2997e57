// What an agent is told: where the relay is, how to trust it, and which local services to expose.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/settings.hpp"
#include "http/access_rules.hpp"
#include "link/encryption.hpp"
#include "proto/proxy_protocol.hpp"
#include "proto/tunnel_kind.hpp"

namespace burrow::agent {

struct service_config {
  std::string name;
  std::string local_host = "127.0.0.1";
  std::uint16_t local_port = 0;
  std::uint16_t remote_port = 0;  // 0: any port the relay offers
  proto::proxy_version proxy = proto::proxy_version::none;
  // End to end (the default for tcp): no public port; visitors use `burrow connect NAME --pin
  // FP`, and TLS runs between them and this agent. Share URLs: an HTTPS URL routed by SNI.
  proto::tunnel_kind kind = proto::tunnel_kind::tcp_e2ee;
  std::string cert_file, key_file;  // blind: the user's own certificate instead of the relay CA's
  // Blind: a certificate from an ACME CA (TLS-ALPN-01, answered by this agent through the relay)
  // instead of the relay CA's. acme_ca: PEM file the ACME server's HTTPS chains to (empty: the
  // system store); acme_email: the account's contact (optional).
  std::string acme_directory, acme_ca, acme_email;
  // Blind: the relay's plain HTTP listener forwards requests (in the clear, readable by the
  // relay) instead of redirecting them to HTTPS.
  bool plain_http = false;
  // Blind share URLs: who may visit (checked by the agent on every request head), and when the
  // URL stops serving and its name is released: after `idle_expiry` without a request, or
  // `expire_in` after the agent started. Zero: never.
  std::shared_ptr<const http::access_rules> rules;
  std::chrono::milliseconds idle_expiry{0};
  std::chrono::milliseconds expire_in{0};
  bool name_given = false;    // false: the agent derives a relay-wide unique name
  std::string visitor_token;  // end-to-end services: the token visitors must present; never logged
};

struct agent_config {
  std::string relay;      // HOST:PORT of the relay's agent listener
  std::string token;      // never logged
  std::string relay_pin;  // canonical "sha256:..." of the relay's certificate, or empty
  std::string relay_ca;   // PEM bundle to verify the relay with when there is no pin
  unsigned links = 2;
  link::link_encryption link_encryption = link::link_encryption::tls;  // none: plain frames
  std::chrono::milliseconds backoff_first{100};
  std::chrono::milliseconds backoff_max{5000};
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds local_connect_timeout{5000};
  std::chrono::milliseconds drain_timeout{10000};
  std::filesystem::path state_dir;  // the end-to-end key and certificate live here
  std::string e2ee_cert, e2ee_key;  // the user's own end-to-end identity, instead of state_dir's
  // How long one end-to-end session (docs/protocol.md, section 6c) may key new streams; then
  // `burrow connect` is refused and makes a new session with a new handshake.
  std::chrono::milliseconds e2ee_session_max_age{std::chrono::hours(2)};
  std::vector<service_config> services;
};

// Names of the agent's settings, as flags, BURROW_* variables and config keys.
const std::vector<std::string>& agent_setting_keys();
const std::vector<std::string>& service_setting_keys();
// Each service key with a line of help, in the order of service_setting_keys() (`burrow up
// --help` prints them).
const std::vector<std::pair<std::string, std::string>>& service_key_help();

// A service from its settings (name, local, remote-port, proxy-protocol, e2ee, visitor-token);
// throws config_error.
service_config make_service(const settings_layer& s, std::string_view where);
// Validates and fills defaults; throws config_error with what to do about it.
agent_config make_agent_config(const layered_settings& s, std::vector<service_config> services);

}  // namespace burrow::agent
