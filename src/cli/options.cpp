// Option binding and logging setup shared by the subcommands.
#include "cli/options.hpp"

#include <cstdlib>
#include <map>
#include <string_view>

#include "core/log.hpp"

namespace burrow::cli {

namespace {

// What each option's value looks like in --help, in place of CLI11's TEXT.
const std::map<std::string_view, std::string_view>& value_shapes() {
  static const std::map<std::string_view, std::string_view> shapes{
      {"acme", "URL"},
      {"acme-ca", "FILE"},
      {"acme-email", "EMAIL"},
      {"advertise", "HOST"},
      {"allow-ip", "CIDR"},
      {"backoff-max", "DURATION"},
      {"bandwidth", "RATE"},
      {"config", "FILE"},
      {"id", "ID"},
      {"label", "LABEL"},
      {"local", "[HOST:]PORT"},
      {"max-services", "N"},
      {"names", "GLOB"},
      {"ports", "FIRST-LAST"},
      {"service", "NAME"},
      {"basic-auth", "USER:PASSWORD"},
      {"bearer", "TOKEN"},
      {"cert", "FILE"},
      {"connect-timeout", "DURATION"},
      {"domain", "DOMAIN"},
      {"drain-timeout", "DURATION"},
      {"e2ee-cert", "FILE"},
      {"e2ee-key", "FILE"},
      {"e2ee-session-max-age", "DURATION"},
      {"expire-in", "DURATION"},
      {"grace", "DURATION"},
      {"handshake-timeout", "DURATION"},
      {"http-listen", "HOST:PORT"},
      {"https-listen", "HOST:PORT"},
      {"idle-expiry", "DURATION"},
      {"key", "FILE"},
      {"link-encryption", "tls|full|none"},
      {"links", "N"},
      {"listen", "HOST:PORT"},
      {"log-format", "text|json"},
      {"log-level", "LEVEL"},
      {"max-links", "N"},
      {"max-streams", "N"},
      {"metrics-listen", "HOST:PORT"},
      {"mode", "blind|inspect|passthrough"},
      {"name", "NAME"},
      {"ping-interval", "DURATION"},
      {"ping-timeout", "DURATION"},
      {"pin", "sha256:HEX"},
      {"port-range", "FIRST-LAST"},
      {"proxy-protocol", "v1|v2"},
      {"public-bind", "ADDRESS"},
      {"relay", "HOST:PORT"},
      {"relay-ca", "FILE"},
      {"relay-pin", "sha256:HEX"},
      {"remote-port", "PORT"},
      {"require-header", "'NAME: VALUE'"},
      {"resume", "BOOL"},
      {"session-keys", "BOOL"},
      {"share-cert-lifetime", "DURATION"},
      {"source-burst", "N"},
      {"source-connections", "N"},
      {"source-rate", "N"},
      {"state-dir", "DIR"},
      {"target", "HOST:PORT"},
      {"stream-idle-timeout", "DURATION"},
      {"tcp-keepalive", "DURATION"},
      {"token", "TOKEN"},
      {"tokens", "FILE"},
      {"visitor-token", "TOKEN"},
      {"window", "BYTES"},
      {"workers", "N"},
  };
  return shapes;
}

}  // namespace

std::string_view value_shape(std::string_view name) {
  auto it = value_shapes().find(name);
  return it == value_shapes().end() ? std::string_view("TEXT") : it->second;
}

CLI::Option* option_set::add(CLI::App& app, const std::string& name, const std::string& help) {
  bound b{nullptr, std::make_unique<std::string>(), nullptr};
  b.option = app.add_option("--" + name, *b.value, help)->type_name(std::string(value_shape(name)));
  auto* opt = b.option;
  options_.emplace(name, std::move(b));
  return opt;
}

CLI::Option* option_set::add_list(CLI::App& app, const std::string& name, const std::string& help) {
  bound b{nullptr, nullptr, std::make_unique<std::vector<std::string>>()};
  b.option =
      app.add_option("--" + name, *b.values, help)->type_name(std::string(value_shape(name)));
  auto* opt = b.option;
  options_.emplace(name, std::move(b));
  return opt;
}

void shape_values(CLI::App& app) {
  for (auto* opt : app.get_options()) {
    if (opt->get_type_name() != "TEXT") continue;  // a flag, --help, or already shaped
    const auto& longs = opt->get_lnames();
    auto name = longs.empty() ? opt->get_name(true) : longs.front();
    opt->type_name(std::string(value_shape(name)));
  }
  for (auto* sub : app.get_subcommands([](CLI::App*) { return true; })) shape_values(*sub);
}

std::string settings_footer(const std::string& example) {
  return "Every --NAME option can also be set in the environment as BURROW_NAME (--" + example +
         ": " + setting_env_name(example) +
         ") or in the -c file as NAME = value. Flags win over the environment, the environment "
         "over the file. DURATION: 500ms, 30s, 5m, 2h.";
}

settings_layer option_set::given() const {
  settings_layer out;
  for (auto& [name, b] : options_) {
    if (b.option->count() == 0) continue;
    if (b.value) {
      out[name] = *b.value;
    } else {
      std::string joined;
      for (auto& v : *b.values) joined += (joined.empty() ? "" : "\n") + v;
      out[name] = joined;
    }
  }
  return out;
}

void add_log_options(option_set& o, CLI::App& app) {
  o.add(app, "log-format", "text (default) or json, one object per line");
  o.add(app, "log-level", "trace, debug, info (default), warn, error or off");
}

void add_source_limit_options(option_set& o, CLI::App& app) {
  o.add(app, "source-connections",
        "open connections one source address may hold across all listeners (IPv6: per /64); "
        "0 = no limit (default 2048)");
  o.add(app, "source-rate",
        "new connections per second one source address may open; 0 = no limit (default 500)");
  o.add(app, "source-burst",
        "new connections a quiet source address may open at once (default 2000)");
}

void add_relay_link_options(option_set& o, CLI::App& app) {
  o.add(app, "relay", "the relay's address, HOST:PORT, as `burrow relay` or the agent printed it");
  o.add(app, "relay-pin", "SHA-256 fingerprint of the relay's certificate (sha256:...)");
  o.add(app, "relay-ca", "PEM file of CAs to verify the relay with, when there is no pin");
  o.add(app, "links",
        "TLS links to keep open to the relay (default 2; 1 when this process may use one CPU)");
  o.add(app, "link-encryption",
        "tls (default): the link is TLS, and bytes encrypted end to end already travel next to "
        "its records, not encrypted twice; full: every byte through the link's TLS; none: "
        "after the TLS handshake the link carries tunnel traffic unencrypted, if the relay "
        "allows it; for private networks only");
  o.add(app, "backoff-max", "longest wait between reconnect attempts (default 5s)");
  o.add(app, "connect-timeout",
        "deadline to reach the relay and finish each handshake (default 10s)");
}

settings_layer environment_layer(const std::vector<std::string>& keys) {
  return settings_from_env(keys, [](const char* n) { return std::getenv(n); });
}

void init_logging_from(const layered_settings& s) {
  auto format_text = s.text_or("log-format", "text");
  auto format = parse_log_format(format_text);
  if (!format)
    throw config_error("invalid value '" + format_text + "' for " + s.origin("log-format") +
                       ": expected text or json");
  auto level_text = s.text_or("log-level", "info");
  auto level = spdlog::level::from_str(level_text);
  if (level == spdlog::level::off && level_text != "off")
    throw config_error("invalid value '" + level_text + "' for " + s.origin("log-level") +
                       ": expected trace, debug, info, warn, error or off");
  init_logging(*format, level);
}

}  // namespace burrow::cli
