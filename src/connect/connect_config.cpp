// `burrow connect` settings, checked before anything is dialled.
#include "connect/connect_config.hpp"

#include "core/address.hpp"
#include "core/workers.hpp"
#include "tls/certs.hpp"

namespace burrow::connect {

const std::vector<std::string>& connect_setting_keys() {
  static const std::vector<std::string> keys{
      "relay",  "relay-pin",    "relay-ca",   "pin",         "visitor-token",
      "listen", "links",        "max-links",  "backoff-max", "connect-timeout",
      "resume", "session-keys", "log-format", "log-level",   "link-encryption"};
  return keys;
}

namespace {

std::string fingerprint_or_throw(const layered_settings& s, const std::string& key,
                                 const std::string& what) {
  auto text = s.text(key);
  if (!text) return {};
  auto canonical = tls::normalize_fingerprint(*text);
  if (!canonical)
    throw config_error(what + " '" + *text + "' (from " + s.origin(key) +
                       ") is not a SHA-256 fingerprint such as sha256:3f1a...");
  return *canonical;
}

// A setting that is true unless it says false.
bool true_or_false(const layered_settings& s, const std::string& key) {
  auto text = s.text_or(key, "true");
  if (text != "true" && text != "false")
    throw config_error(key + " '" + text + "' (from " + s.origin(key) + ") is not true or false");
  return text == "true";
}

}  // namespace

connect_config make_connect_config(const layered_settings& s, std::string service) {
  connect_config c;
  c.service = std::move(service);
  if (c.service.empty() || c.service.size() > 63)
    throw config_error("the service name is 1 to 63 characters, as the agent printed it");
  c.relay = s.text_or("relay", "");
  if (c.relay.empty())
    throw config_error(
        "no relay given: pass --relay HOST:PORT (or BURROW_RELAY); the agent prints the exact "
        "`burrow connect` command");
  auto hp = parse_host_port(c.relay, std::uint16_t{7835});
  if (!hp || hp->host.empty() || hp->port == 0)
    throw config_error("relay address '" + c.relay + "' (from " + s.origin("relay") +
                       ") is not HOST:PORT");
  c.relay_pin = fingerprint_or_throw(s, "relay-pin", "relay pin");
  c.relay_ca = s.text_or("relay-ca", "");
  c.link_encryption = link::parse_link_encryption_setting(s);
  c.pin = fingerprint_or_throw(s, "pin", "pin");
  if (c.pin.empty())
    throw config_error(
        "no --pin given: the agent prints its certificate's fingerprint (sha256:...) with the "
        "`burrow connect` command; without it nobody can tell the agent from an impostor");
  c.visitor_token = s.text_or("visitor-token", "");
  c.listen = s.text_or("listen", "");
  if (!c.listen.empty()) {
    auto lp = parse_host_port(c.listen, std::nullopt);
    if (!lp) lp = parse_host_port("127.0.0.1:" + c.listen, std::nullopt);
    if (!lp) throw config_error("listen address '" + c.listen + "' is not HOST:PORT (or PORT)");
    c.listen = format_host_port(lp->host.empty() ? "127.0.0.1" : lp->host, lp->port);
  }
  c.resume = true_or_false(s, "resume");
  c.session_keys = true_or_false(s, "session-keys");
  c.links = static_cast<unsigned>(s.number_or("links", default_links(), 1, 64));
  c.max_links = static_cast<unsigned>(s.number_or("max-links", 8, 1, 64));
  if (c.max_links < c.links) c.max_links = c.links;
  c.backoff_max = s.duration_or("backoff-max", c.backoff_max);
  if (c.backoff_max < std::chrono::milliseconds(100))
    c.backoff_max = std::chrono::milliseconds(100);
  c.connect_timeout = s.duration_or("connect-timeout", c.connect_timeout);
  return c;
}

}  // namespace burrow::connect
