// Relay settings: defaults, bounds and messages.
#include "relay/relay_settings.hpp"

#include <boost/asio/ip/address.hpp>

#include "proto/client_hello.hpp"
#include "relay/state_dir.hpp"

namespace burrow::relay {

const std::vector<std::string>& relay_setting_keys() {
  static const std::vector<std::string> keys{"state-dir",
                                             "listen",
                                             "public-bind",
                                             "port-range",
                                             "advertise",
                                             "workers",
                                             "grace",
                                             "handshake-timeout",
                                             "drain-timeout",
                                             "ping-interval",
                                             "ping-timeout",
                                             "max-streams",
                                             "stream-idle-timeout",
                                             "window",
                                             "log-format",
                                             "log-level",
                                             "domain",
                                             "https-listen",
                                             "http-listen",
                                             "share-cert-lifetime",
                                             "source-connections",
                                             "source-rate",
                                             "source-burst",
                                             "tcp-keepalive",
                                             "metrics-listen",
                                             "link-encryption",
                                             "tokens"};
  return keys;
}

relay_config make_relay_config(const layered_settings& s) {
  relay_config c;
  c.state_dir = s.text_or("state-dir", default_state_dir().string());
  c.tokens_file = s.text_or("tokens", (c.state_dir / "tokens.toml").string());
  if (c.tokens_file.empty())
    throw config_error("tokens (from " + s.origin("tokens") + ") is empty");
  c.listen = s.list_or("listen", c.listen);
  for (auto& l : c.listen)
    if (!parse_host_port(l, default_agent_port))
      throw config_error("listen address '" + l + "' (from " + s.origin("listen") +
                         ") is not HOST:PORT");
  c.public_bind = s.list_or("public-bind", c.public_bind);
  for (auto& b : c.public_bind) {
    boost::system::error_code ec;
    boost::asio::ip::make_address(b, ec);
    if (ec)
      throw config_error("public bind address '" + b + "' (from " + s.origin("public-bind") +
                         ") is not an IP address");
  }
  if (c.listen.empty() || c.public_bind.empty())
    throw config_error("the relay needs at least one listen and one public-bind address");
  if (auto r = s.text("port-range")) {
    auto range = parse_port_range(*r);
    if (!range)
      throw config_error("port range '" + *r + "' (from " + s.origin("port-range") +
                         ") is not FIRST-LAST, PORT, or 0 for any free port");
    c.ports = *range;
  }
  c.advertise = s.text_or("advertise", "");
  auto domain = s.text_or("domain", c.domain);
  auto canonical = proto::canonical_host_name(domain);
  if (!canonical || canonical->find('.') == std::string::npos)
    throw config_error("domain '" + domain + "' (from " + s.origin("domain") +
                       ") is not a DNS name with at least two labels, such as burrow.example.com");
  c.domain = *canonical;
  if (auto h = s.text("https-listen")) {
    c.https_listen = s.list_or("https-listen", {});
    c.https_listen_given = true;
    for (auto& l : c.https_listen)
      if (!parse_host_port(l, std::uint16_t{443}))
        throw config_error("https-listen address '" + l + "' (from " + s.origin("https-listen") +
                           ") is not HOST:PORT");
  }
  auto lifetime = s.duration_or("share-cert-lifetime", c.share_cert_lifetime);
  if (lifetime < std::chrono::seconds(10) || lifetime > std::chrono::hours(24 * 90))
    throw config_error("share-cert-lifetime (from " + s.origin("share-cert-lifetime") +
                       ") must be between 10s and 90 days");
  c.share_cert_lifetime = std::chrono::duration_cast<std::chrono::seconds>(lifetime);
  if (auto h = s.text("http-listen")) {
    c.http_listen = s.list_or("http-listen", {});
    c.http_listen_given = true;
    for (auto& l : c.http_listen)
      if (!parse_host_port(l, std::uint16_t{80}))
        throw config_error("http-listen address '" + l + "' (from " + s.origin("http-listen") +
                           ") is not HOST:PORT");
  }
  c.workers = static_cast<unsigned>(s.number_or("workers", 0, 0, 256));
  c.grace = s.duration_or("grace", c.grace);
  c.handshake_timeout = s.duration_or("handshake-timeout", c.handshake_timeout);
  c.drain_timeout = s.duration_or("drain-timeout", c.drain_timeout);
  c.limits.ping_interval = s.duration_or("ping-interval", c.limits.ping_interval);
  c.limits.ping_timeout = s.duration_or("ping-timeout", c.limits.ping_timeout);
  if (c.limits.ping_interval < std::chrono::milliseconds(100) ||
      c.limits.ping_timeout < std::chrono::milliseconds(100))
    throw config_error("ping-interval and ping-timeout must be at least 100ms");
  if (c.handshake_timeout.count() == 0) throw config_error("handshake-timeout must not be 0");
  c.limits.max_streams =
      static_cast<std::uint32_t>(s.number_or("max-streams", c.limits.max_streams, 1, 1u << 30));
  c.limits.stream_idle_timeout = s.duration_or("stream-idle-timeout", c.limits.stream_idle_timeout);
  c.limits.initial_window = static_cast<std::uint32_t>(
      s.number_or("window", c.limits.initial_window, 16 * 1024, 16 * 1024 * 1024));
  c.source = source_limits_from(s, c.source);
  auto keepalive = s.duration_or("tcp-keepalive", c.tcp_keepalive);
  if (keepalive.count() != 0 && keepalive < std::chrono::seconds(1))
    throw config_error("tcp-keepalive must be 0 (off) or at least 1s");
  c.tcp_keepalive = std::chrono::duration_cast<std::chrono::seconds>(keepalive);
  c.link_encryption = link::parse_link_encryption_setting(s);
  c.metrics_listen = s.list_or("metrics-listen", {});
  for (auto& l : c.metrics_listen)
    if (!parse_host_port(l, std::uint16_t{0}))
      throw config_error("metrics-listen address '" + l + "' (from " + s.origin("metrics-listen") +
                         ") is not HOST:PORT");
  return c;
}

}  // namespace burrow::relay
