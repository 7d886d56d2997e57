// `burrow connect`: builds the visitor's configuration and runs it.
#include <spdlog/spdlog.h>

#include "cli/options.hpp"
#include "connect/connector.hpp"

namespace burrow::cli {

void add_connect_options(option_set& o, CLI::App& app) {
  add_relay_link_options(o, app);
  o.add(app, "pin", "SHA-256 fingerprint of the agent's end-to-end certificate (required)");
  o.add(app, "visitor-token",
        "the token the service asks of visitors, if any (better: BURROW_VISITOR_TOKEN)");
  o.add(app, "listen", "accept local connections on HOST:PORT (or PORT; 0 picks one)");
  o.add(app, "max-links", "most links to open when the others are full (default 8)");
  o.add(app, "resume", "resume TLS sessions with the agent: true (default) or false");
  o.add(app, "session-keys",
        "key each connection from one end-to-end session with the agent instead of a TLS "
        "handshake per connection: true (default) or false");
  add_log_options(o, app);
}

int run_connect(const layered_settings& s, std::string service, bool stdio) {
  auto config = connect::make_connect_config(s, std::move(service));
  config.stdio = stdio;
  if (stdio && !config.listen.empty())
    throw config_error("--stdio and --listen exclude each other: pick one");
  if (!stdio && config.listen.empty())
    throw config_error(
        "say where visitors' programs connect: --listen 127.0.0.1:PORT, or --stdio for one "
        "connection on standard input and output (ssh -o ProxyCommand)");
  if (config.relay_pin.empty() && config.relay_ca.empty())
    spdlog::warn("no --relay-pin: the relay's certificate is checked against the system's CAs");
  if (config.link_encryption == link::link_encryption::none)
    spdlog::warn("{}; an end-to-end service's streams stay encrypted between you and the agent",
                 link::unencrypted_link_warning);
  connect::connector c(std::move(config));
  c.bind();
  return c.run();
}

}  // namespace burrow::cli
