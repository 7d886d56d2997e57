// `burrow relay`: loads or creates the state directory, binds, prints the agent command, serves.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>

#include "cli/options.hpp"
#include "core/address.hpp"
#include "core/secret.hpp"
#include "relay/relay.hpp"
#include "relay/relay_settings.hpp"
#include "tls/certs.hpp"

namespace burrow::cli {

void add_relay_options(option_set& o, CLI::App& app) {
  o.add(app, "state-dir",
        "where the CA, certificate and agent token live "
        "(default $XDG_STATE_HOME/burrow/relay)");
  o.add_list(app, "listen",
             "agent listener HOST:PORT, repeatable (default 0.0.0.0:7835 and [::]:7835)");
  o.add_list(app, "public-bind",
             "address public ports listen on, repeatable (default 0.0.0.0 and ::)");
  o.add(app, "port-range",
        "public ports to hand out: FIRST-LAST, or 0 for any (default 20000-29999)");
  o.add(app, "advertise",
        "host name shown to agents and visitors (default: listen host or hostname)");
  o.add(app, "workers", "worker threads (default: one per CPU this process may run on)");
  o.add(app, "domain",
        "share URLs are https://NAME.DOMAIN; point *.DOMAIN at this host (default "
        "burrow.localhost)");
  o.add_list(app, "https-listen",
             "HTTPS listener HOST:PORT, repeatable; empty value: none (default 0.0.0.0:443 and "
             "[::]:443, skipped if they cannot be bound)");
  o.add_list(app, "http-listen",
             "plain HTTP listener HOST:PORT, repeatable; empty value: none (default 0.0.0.0:80 "
             "and [::]:80, skipped if they cannot be bound); redirects to HTTPS unless a share "
             "URL asks for plain HTTP");
  o.add(app, "share-cert-lifetime",
        "lifetime of the certificates the relay's CA signs for share URLs; agents renew them "
        "after two thirds (default 24h)");
  o.add(app, "tokens",
        "scoped agent tokens file, managed with `burrow relay token` (default "
        "STATE_DIR/tokens.toml); re-read when it changes and on SIGHUP");
  o.add(app, "grace", "how long a gone agent's ports stay reserved for its token (default 30s)");
  o.add(app, "handshake-timeout", "TLS handshake and hello deadline (default 10s)");
  o.add(app, "drain-timeout", "on SIGTERM, how long open streams may finish (default 10s)");
  o.add(app, "ping-interval", "keepalive ping interval (default 5s)");
  o.add(app, "ping-timeout", "silence after a ping interval that closes a link (default 5s)");
  o.add(app, "max-streams", "open streams per link (default 65536)");
  o.add(app, "stream-idle-timeout", "close streams idle this long; 0 = never (default 0)");
  o.add(app, "window", "per-stream flow-control window in bytes (default 262144)");
  add_source_limit_options(o, app);
  o.add(app, "tcp-keepalive",
        "idle time before TCP keepalive probes reap a vanished peer; 0 = off (default 60s)");
  o.add(app, "link-encryption",
        "tls (default): every agent link is encrypted, and end-to-end streams (burrow connect, "
        "blind and passthrough share URLs) travel next to its records rather than encrypted "
        "twice; full: every byte through the link's TLS; none: also accept agents and `burrow "
        "connect` that ask for links without encryption (--link-encryption none on their "
        "side), for private networks only");
  o.add_list(app, "metrics-listen",
             "serve Prometheus metrics at http://HOST:PORT/metrics, repeatable (default: none; "
             "keep it on a private address)");
}

int print_relay_ca(const layered_settings& s) {
  auto config = relay::make_relay_config(s);
  auto pem = config.state_dir / "ca.pem";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(pem, ec))
    throw config_error("no relay state in " + config.state_dir.string() +
                       " (no ca.pem there): pass the --state-dir that `burrow relay` printed "
                       "at start, or start the relay once to create it");
  auto cert = read_file(pem);
  auto fingerprint = tls::fingerprint_sha256(cert);  // throws if it is not a certificate
  std::fprintf(stderr, "burrow: the CA certificate of the relay state in %s (%s)\n",
               config.state_dir.string().c_str(), fingerprint.c_str());
  std::fputs(cert.c_str(), stdout);
  return 0;
}

int run_relay(const layered_settings& s, std::function<layered_settings()> reread) {
  auto config = relay::make_relay_config(s);
  if (config.link_encryption == link::link_encryption::none)
    spdlog::warn("{} (this relay accepts such links from agents that ask)",
                 link::unencrypted_link_warning);
  std::vector<std::string> names;
  if (!config.advertise.empty()) names.push_back(config.advertise);
  auto state = relay::load_or_create_state(config.state_dir, names);
  bool first_start = state.token_created;
  std::string token = state.agent_token;
  std::string fingerprint = tls::fingerprint_sha256(state.server.cert_pem);
  auto dir = state.dir;
  std::string domain = config.domain;
  relay::relay r(std::move(config), std::move(state));
  r.bind();
  if (reread) r.set_config_source([reread] { return relay::make_relay_config(reread()); });

  auto endpoints = r.agent_endpoints();
  std::string host = r.advertise_host();
  std::uint16_t port = endpoints.front().port();
  std::string out = fmt::format("burrow relay {}\n", BURROW_VERSION);
  for (auto& ep : endpoints)
    out += fmt::format("agents connect to {}\n",
                       format_host_port(ep.address().to_string(), ep.port()));
  for (auto& ep : r.https_endpoints())
    out += fmt::format("share URLs https://NAME.{} served on {}\n", domain,
                       format_host_port(ep.address().to_string(), ep.port()));
  for (auto& ep : r.http_endpoints())
    out += fmt::format("plain HTTP for NAME.{} served on {}\n", domain,
                       format_host_port(ep.address().to_string(), ep.port()));
  for (auto& ep : r.metrics_endpoints())
    out += fmt::format("metrics at http://{}/metrics\n",
                       format_host_port(ep.address().to_string(), ep.port()));
  out += fmt::format("relay fingerprint: {}\nstate directory: {}\n", fingerprint, dir.string());
  std::string relay_addr = format_host_port(host, port);
  if (first_start) {
    out += fmt::format(
        "expose a local port with (the token is shown once; it is kept in {}/agent.token):\n"
        "  burrow tcp PORT --relay {} --token {} --relay-pin {}\n",
        dir.string(), relay_addr, token, fingerprint);
  } else {
    out += fmt::format(
        "expose a local port with:\n"
        "  burrow tcp PORT --relay {} --token \"$(cat {}/agent.token)\" --relay-pin {}\n",
        relay_addr, dir.string(), fingerprint);
  }
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  spdlog::info("relay ready; agents connect to {}", relay_addr);
  return r.run();
}

}  // namespace burrow::cli
