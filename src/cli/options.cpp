// Option binding and logging setup shared by the subcommands.
#include "cli/options.hpp"

#include <cstdlib>

#include "core/log.hpp"

namespace burrow::cli {

CLI::Option* option_set::add(CLI::App& app, const std::string& name, const std::string& help) {
  bound b{nullptr, std::make_unique<std::string>(), nullptr};
  b.option = app.add_option("--" + name, *b.value, help);
  auto* opt = b.option;
  options_.emplace(name, std::move(b));
  return opt;
}

CLI::Option* option_set::add_list(CLI::App& app, const std::string& name, const std::string& help) {
  bound b{nullptr, nullptr, std::make_unique<std::vector<std::string>>()};
  b.option = app.add_option("--" + name, *b.values, help);
  auto* opt = b.option;
  options_.emplace(name, std::move(b));
  return opt;
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
