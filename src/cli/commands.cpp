// Subcommand dispatch for the burrow executable: parses flags, layers them over BURROW_*
// variables and the config file, and hands a validated configuration to the library.
#include "cli/commands.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent_config.hpp"
#include "cli/options.hpp"
#include "connect/connect_config.hpp"
#include "core/config_file.hpp"
#include "core/error_text.hpp"
#include "core/log.hpp"
#include "forward/forward_settings.hpp"
#include "relay/relay_settings.hpp"

namespace burrow::cli {

namespace {

void add_agent_options(option_set& o, CLI::App& app) {
  add_relay_link_options(o, app);
  o.add(app, "token", "the agent token the relay printed (better: BURROW_TOKEN)");
  o.add(app, "drain-timeout", "on SIGINT/SIGTERM, how long open streams may finish (default 10s)");
  o.add(app, "state-dir",
        "where the end-to-end key and certificate live (default $XDG_STATE_HOME/burrow/agent)");
  o.add(app, "e2ee-cert", "your own end-to-end certificate (PEM), with --e2ee-key");
  o.add(app, "e2ee-key", "the private key of --e2ee-cert (PEM)");
  o.add(app, "e2ee-session-max-age",
        "how long one end-to-end session of `burrow connect` keys new connections (default 2h)");
  add_log_options(o, app);
}

// `burrow up --help`: what a [[service]] table may hold.
std::string service_keys_footer() {
  std::string out = "Each [[service]] table of the file takes (dashes or underscores):";
  for (auto& [key, help] : agent::service_key_help()) out += fmt::format("\n  {:<16}{}", key, help);
  return out;
}

// CLI11 answers a mistyped command word with "A subcommand is required". The word is left over
// in the deepest command given (or, through fallthrough, in one of its parents): name it, and
// the commands that would have been understood there.
std::optional<std::string> unknown_command(CLI::App& app) {
  std::vector<CLI::App*> chain{&app};
  while (true) {
    auto given = chain.back()->get_subcommands();
    if (given.empty()) break;
    chain.push_back(given.front());
  }
  auto* deepest = chain.back();
  if (deepest->get_require_subcommand_min() == 0) return std::nullopt;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    for (auto& word : (*it)->remaining()) {
      if (word.empty() || word.front() == '-') continue;
      std::string path, known;
      for (auto* a : chain) path += (path.empty() ? "" : " ") + a->get_name();
      for (auto* sub : deepest->get_subcommands([](CLI::App*) { return true; }))
        known += (known.empty() ? "" : ", ") + sub->get_name();
      return "unknown command '" + word + "' for '" + path + "' (commands: " + known + ")";
    }
  }
  return std::nullopt;
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{"Burrow: expose a service behind NAT through a relay, without opening a port.",
               "burrow"};
  app.set_version_flag("--version", std::string("burrow ") + BURROW_VERSION);
  app.require_subcommand(1);

  // burrow relay
  option_set relay_opts;
  std::string relay_file;
  auto* relay_cmd = app.add_subcommand("relay", "Run a relay: agents dial in, visitors reach them");
  relay_cmd->add_option("-c,--config", relay_file, "TOML config file (flags and BURROW_* win)");
  add_relay_options(relay_opts, *relay_cmd);
  add_log_options(relay_opts, *relay_cmd);
  relay_cmd->footer(settings_footer("state-dir"));
  // `ca` and `token` read the relay's state: its --state-dir and -c are theirs too, shown in
  // their own --help.
  std::string relay_state_dir;
  auto add_relay_state_options = [&](CLI::App* cmd) {
    cmd->fallthrough();  // the rest of `relay`'s options are taken as well
    cmd->add_option("--state-dir", relay_state_dir,
                    "the relay's state directory, as `burrow relay` printed it (default "
                    "$XDG_STATE_HOME/burrow/relay)")
        ->type_name("DIR");
    cmd->add_option("-c,--config", relay_file, "the relay's TOML config file (for its state-dir)")
        ->type_name("FILE");
  };
  auto* relay_ca_cmd = relay_cmd->add_subcommand(
      "ca", "Print the CA certificate (PEM) of an existing relay state, for visitors to trust");
  add_relay_state_options(relay_ca_cmd);
  auto* token_cmd = relay_cmd->add_subcommand(
      "token", "Manage scoped agent tokens (the relay's tokens file; see docs/security.md)");
  add_relay_state_options(token_cmd);
  token_cmd->require_subcommand(1);
  token_add_request token_add;
  auto* token_add_cmd = token_cmd->add_subcommand(
      "add", "Make a new agent token and print it once; the relay keeps only its SHA-256");
  token_add_cmd->fallthrough();
  token_add_cmd->add_option("--label", token_add.label, "who or what the token is for");
  token_add_cmd->add_option("--names", token_add.names,
                            "names it may claim for end-to-end services and share URLs, with * "
                            "as a wildcard (ci-*); repeatable (default *)");
  token_add_cmd->add_option("--ports", token_add.ports,
                            "public ports it may claim: FIRST-LAST or PORT; repeatable (default: "
                            "the relay's whole range)");
  token_add_cmd->add_option("--max-services", token_add.max_services,
                            "services it may hold at once over all its agents (default 0: any)");
  token_add_cmd->add_option("--bandwidth", token_add.bandwidth,
                            "bytes per second over all its streams, both directions, with an "
                            "optional k, M or G (powers of 1000): 10M (default 0: no cap)");
  auto* token_list_cmd =
      token_cmd->add_subcommand("list", "List the tokens the relay accepts (never the tokens)");
  token_list_cmd->fallthrough();
  std::string token_revoke_id;
  auto* token_revoke_cmd = token_cmd->add_subcommand(
      "revoke", "Revoke a token by id ('default' for agent.token); its links are closed");
  token_revoke_cmd->fallthrough();
  token_revoke_cmd->add_option("id", token_revoke_id, "the token's id, as `token list` shows it")
      ->required();

  // burrow tcp [HOST:]PORT
  option_set tcp_opts;
  std::string tcp_local, tcp_file;
  auto* tcp_cmd = app.add_subcommand("tcp", "Expose a local TCP port through the relay");
  tcp_cmd->add_option("local", tcp_local, "the local service: PORT or HOST:PORT")->required();
  tcp_cmd->add_option("-c,--config", tcp_file, "TOML config file (flags and BURROW_* win)");
  add_agent_options(tcp_opts, *tcp_cmd);
  tcp_cmd->footer(settings_footer("token"));
  bool no_e2ee = false;
  tcp_cmd->add_flag("--no-e2ee", no_e2ee,
                    "a plain public port on the relay instead of end-to-end encryption through "
                    "`burrow connect` (the relay can then read the traffic)");
  tcp_opts.add(*tcp_cmd, "remote-port",
               "with --no-e2ee: the public port to claim (default: any free port)");
  tcp_opts.add(*tcp_cmd, "name",
               "the service's name (default tcp-PORT plus, end to end, the agent's key id)");
  tcp_opts.add(*tcp_cmd, "visitor-token",
               "end to end: a token visitors must present (burrow connect --visitor-token)");
  tcp_opts.add(*tcp_cmd, "proxy-protocol",
               "send a PROXY protocol header (v1 or v2) to the service");

  // burrow http [HOST:]PORT
  option_set http_opts;
  std::string http_local, http_file;
  auto* http_cmd =
      app.add_subcommand("http", "Give a local web service an HTTPS share URL on the relay");
  http_cmd->add_option("local", http_local, "the local service: PORT or HOST:PORT")->required();
  http_cmd->add_option("-c,--config", http_file, "TOML config file (flags and BURROW_* win)");
  add_agent_options(http_opts, *http_cmd);
  http_cmd->footer(settings_footer("token"));
  http_opts.add(*http_cmd, "name",
                "the share URL's name: https://NAME.DOMAIN (default http-PORT plus the agent's "
                "key id)");
  http_opts.add(*http_cmd, "mode",
                "blind (default): TLS ends at this agent, which speaks HTTP/1.1 to the service "
                "and adds X-Forwarded-*; the relay cannot read it. inspect: TLS ends at the "
                "relay, which applies the access rules and logs each request. passthrough: the "
                "TLS goes on to a local service that speaks TLS itself");
  http_opts.add(*http_cmd, "cert",
                "blind mode: your own certificate for the share URL's name (PEM, chain after the "
                "leaf), with --key; default: one the relay's CA signs for this agent's key");
  http_opts.add(*http_cmd, "key", "the private key of --cert (PEM)");
  http_opts.add(*http_cmd, "acme",
                "blind mode: get the certificate from this ACME directory (https://.../directory; "
                "TLS-ALPN-01, answered by this agent through the relay, which never holds the "
                "key), renewed after two thirds of its life");
  http_opts.add(*http_cmd, "acme-ca",
                "PEM file of CAs to trust for the ACME server's own HTTPS (default: the system's)");
  http_opts.add(*http_cmd, "acme-email", "contact for the ACME account (optional)");
  http_opts.add_list(*http_cmd, "basic-auth",
                     "visitors must log in: USER:PASSWORD, or USER:HASH (bcrypt $2b$ or SHA-512 "
                     "crypt $6$, as htpasswd -B or mkpasswd make them); repeatable");
  http_opts.add_list(*http_cmd, "bearer",
                     "visitors must send Authorization: Bearer TOKEN; repeatable");
  http_opts.add_list(*http_cmd, "require-header",
                     "visitors must send this header with this value: 'Name: value'; repeatable");
  http_opts.add_list(*http_cmd, "allow-ip",
                     "only visitors from this network: CIDR or address, IPv4 or IPv6; repeatable");
  http_opts.add(*http_cmd, "idle-expiry",
                "stop serving and release the name after this long without a request (e.g. 30m)");
  http_opts.add(*http_cmd, "expire-in",
                "stop serving and release the name this long after start (e.g. 2h)");
  bool plain_http = false;
  http_cmd->add_flag("--plain-http", plain_http,
                     "blind mode: also serve http://NAME.DOMAIN in the clear instead of "
                     "redirecting it to HTTPS (the relay can read that traffic)");

  // burrow up -c burrow.toml
  option_set up_opts;
  std::string up_file;
  auto* up_cmd = app.add_subcommand("up", "Expose every [[service]] of a config file");
  up_cmd->add_option("-c,--config", up_file, "TOML config file with [[service]] tables")
      ->required();
  add_agent_options(up_opts, *up_cmd);
  up_cmd->footer(service_keys_footer() + "\n\n" + settings_footer("token"));

  // burrow connect SERVICE
  option_set connect_opts;
  std::string connect_service, connect_file;
  bool connect_stdio = false;
  auto* connect_cmd = app.add_subcommand(
      "connect", "Reach an end-to-end service: TLS to the agent, pinned, through the relay");
  connect_cmd->add_option("service", connect_service, "the service's name, as the agent printed it")
      ->required();
  connect_cmd->add_option("-c,--config", connect_file, "TOML config file (flags and BURROW_* win)");
  connect_cmd->add_flag("--stdio", connect_stdio,
                        "one connection on standard input and output (ssh -o ProxyCommand)");
  add_connect_options(connect_opts, *connect_cmd);
  connect_cmd->footer(settings_footer("relay-pin"));

  // burrow forward LISTEN TARGET
  option_set forward_opts;
  std::string forward_listen, forward_target, forward_file;
  auto* forward_cmd = app.add_subcommand(
      "forward", "Forward a local TCP port to another address, no relay (as socat or rinetd)");
  forward_cmd->add_option("listen", forward_listen,
                          "where to listen: PORT (on 127.0.0.1) or IP:PORT (0.0.0.0:PORT for "
                          "every interface)");
  forward_cmd->add_option("target", forward_target, "where each connection goes: HOST:PORT");
  forward_cmd->add_option("-c,--config", forward_file,
                          "TOML config file: shared settings and [[forward]] tables");
  add_forward_options(forward_opts, *forward_cmd);
  forward_cmd->footer(forward_keys_footer() + "\n\n" + settings_footer("drain-timeout"));

  shape_values(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RequiredError& e) {
    if (auto unknown = unknown_command(app)) {
      std::fprintf(stderr, "burrow: %s\nRun with --help for more information.\n", unknown->c_str());
      return static_cast<int>(CLI::ExitCodes::ExtrasError);
    }
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  try {
    if (relay_cmd->parsed()) {
      const auto& keys = relay::relay_setting_keys();
      config_file file;
      if (!relay_file.empty()) file = load_config_file(relay_file, keys, {});
      auto given = relay_opts.given();
      if (!relay_state_dir.empty()) given["state-dir"] = relay_state_dir;
      layered_settings s(given, environment_layer(keys), file.settings);
      init_logging_from(s);
      if (relay_ca_cmd->parsed()) return print_relay_ca(s);
      if (token_add_cmd->parsed()) return relay_token_add(s, token_add);
      if (token_list_cmd->parsed()) return relay_token_list(s);
      if (token_revoke_cmd->parsed()) return relay_token_revoke(s, token_revoke_id);
      auto flags = relay_opts.given();
      auto reread = [flags, keys, relay_file] {
        config_file again;
        if (!relay_file.empty()) again = load_config_file(relay_file, keys, {});
        return layered_settings(flags, environment_layer(keys), again.settings);
      };
      return run_relay(s, reread);
    }
    if (connect_cmd->parsed()) {
      const auto& keys = connect::connect_setting_keys();
      config_file file;
      if (!connect_file.empty()) file = load_config_file(connect_file, keys, {});
      layered_settings s(connect_opts.given(), environment_layer(keys), file.settings);
      init_logging_from(s);
      return run_connect(s, connect_service, connect_stdio);
    }
    if (forward_cmd->parsed()) {
      const auto& keys = forward::forward_setting_keys();
      config_file file;
      if (!forward_file.empty())
        file = load_config_file(forward_file, keys, forward::forward_rule_keys(), "forward");
      layered_settings s(forward_opts.given(), environment_layer(keys), file.settings);
      init_logging_from(s);
      return run_forward(s, file.services, forward_listen, forward_target);
    }
    const auto& keys = agent::agent_setting_keys();
    const auto& service_keys = agent::service_setting_keys();
    if (tcp_cmd->parsed()) {
      config_file file;
      if (!tcp_file.empty()) file = load_config_file(tcp_file, keys, service_keys);
      if (!file.services.empty())
        throw config_error(tcp_file + ": [[service]] tables are exposed by `burrow up -c " +
                           tcp_file + "`, not by `burrow tcp`");
      auto flags = tcp_opts.given();
      settings_layer service{{"local", tcp_local}};
      for (const char* k : {"remote-port", "name", "proxy-protocol", "visitor-token"}) {
        if (auto it = flags.find(k); it != flags.end()) service[k] = it->second;
        flags.erase(k);
      }
      if (no_e2ee) service["e2ee"] = "false";
      layered_settings s(std::move(flags), environment_layer(keys), file.settings);
      init_logging_from(s);
      return run_agent(s, {service});
    }
    if (http_cmd->parsed()) {
      config_file file;
      if (!http_file.empty()) file = load_config_file(http_file, keys, service_keys);
      auto flags = http_opts.given();
      settings_layer service{{"local", http_local}, {"kind", "http"}};
      for (const char* k :
           {"name", "mode", "cert", "key", "acme", "acme-ca", "acme-email", "basic-auth", "bearer",
            "require-header", "allow-ip", "idle-expiry", "expire-in"}) {
        if (auto it = flags.find(k); it != flags.end()) service[k] = it->second;
        flags.erase(k);
      }
      if (plain_http) service["plain-http"] = "true";
      layered_settings s(std::move(flags), environment_layer(keys), file.settings);
      init_logging_from(s);
      return run_agent(s, {service});
    }
    config_file file = load_config_file(up_file, keys, service_keys);
    if (file.services.empty())
      throw config_error(up_file + ": no [[service]] tables; nothing to expose");
    layered_settings s(up_opts.given(), environment_layer(keys), file.settings);
    init_logging_from(s);
    return run_agent(s, file.services);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "burrow: %s\n", redact_tokens(error_text(e)).c_str());
    return 1;
  }
}

}  // namespace burrow::cli
