// The relay's state directory for the embedded default: its CA, its server certificate and the
// agent token, created on first start and reused afterwards.
#pragma once

#include "tls/certs.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace burrow::relay {

struct relay_state {
  std::filesystem::path dir;
  tls::key_pair ca;            // ca.pem / ca.key
  tls::key_pair server;        // relay.pem / relay.key, signed by ca
  std::string agent_token;     // agent.token
  bool token_created = false;  // true when this call created the token (first start)
};

// Loads the relay's state directory, creating what is missing: the directory (0700), a CA valid
// 10 years, a server certificate valid 1 year for `names` plus localhost, 127.0.0.1 and ::1, and
// an agent token (random_token()). Private files 0600. The server certificate is re-issued when a
// name in `names` is missing from it or it expires within 30 days. Names that parse as IP
// addresses become IP SANs, the others DNS SANs.
relay_state load_or_create_state(const std::filesystem::path& dir,
                                 const std::vector<std::string>& names);

// $XDG_STATE_HOME/burrow/relay, else $HOME/.local/state/burrow/relay, else ./.burrow-relay
std::filesystem::path default_state_dir();

}  // namespace burrow::relay
