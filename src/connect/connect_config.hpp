// What `burrow connect` is told: the relay, the service's name, the agent's pin, and where the
// visitor's own programs reach it (a local listener, or standard input and output).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/settings.hpp"
#include "link/encryption.hpp"

namespace burrow::connect {

struct connect_config {
  std::string service;        // the end-to-end service's name on the relay
  std::string relay;          // HOST:PORT of the relay's agent port
  std::string relay_pin;      // canonical sha256:... of the relay's certificate, or empty
  std::string relay_ca;       // PEM file to verify the relay with when there is no pin
  std::string pin;            // canonical sha256:... of the agent's end-to-end certificate
  std::string visitor_token;  // if the service asks for one; never logged
  std::string listen;         // HOST:PORT to accept local connections on (port 0: any)
  bool stdio = false;         // one connection over standard input and output instead
  bool resume = true;         // TLS session resumption with the agent
  bool session_keys = true;   // key each connection from one end-to-end session (listen mode)
  unsigned links = 2;         // links kept open to the relay
  link::link_encryption link_encryption = link::link_encryption::tls;  // none: plain frames
  unsigned max_links = 8;  // more are opened when every link is full
  std::chrono::milliseconds backoff_first{100};
  std::chrono::milliseconds backoff_max{5000};
  std::chrono::milliseconds connect_timeout{10000};  // relay link, stream open, TLS handshake
};

const std::vector<std::string>& connect_setting_keys();

// Validates and fills defaults; throws config_error with what to do about it.
connect_config make_connect_config(const layered_settings& s, std::string service);

}  // namespace burrow::connect
