// Agent settings: validation with messages that tell the user what to change.
#include "agent/agent_config.hpp"

#include <set>

#include "core/address.hpp"
#include "core/duration.hpp"
#include "core/workers.hpp"
#include "tls/certs.hpp"

namespace burrow::agent {

const std::vector<std::string>& agent_setting_keys() {
  static const std::vector<std::string> keys{
      "relay",       "token",      "relay-pin", "relay-ca",        "links",
      "backoff-max", "log-format", "log-level", "connect-timeout", "drain-timeout",
      "state-dir",   "e2ee-cert",  "e2ee-key",  "link-encryption", "e2ee-session-max-age"};
  return keys;
}

const std::vector<std::string>& service_setting_keys() {
  static const std::vector<std::string> keys{
      "name",          "local",      "remote-port", "proxy-protocol", "e2ee",
      "visitor-token", "kind",       "mode",        "cert",           "key",
      "plain-http",    "basic-auth", "bearer",      "require-header", "allow-ip",
      "idle-expiry",   "expire-in",  "acme",        "acme-ca",        "acme-email"};
  return keys;
}

const std::vector<std::pair<std::string, std::string>>& service_key_help() {
  static const std::vector<std::pair<std::string, std::string>> help{
      {"name", "the service's name (tcp: default tcp-PORT; http: the share URL's NAME)"},
      {"local", "the local service: PORT or HOST:PORT (required)"},
      {"remote-port", "with e2ee = false: the public port to claim (default: any free port)"},
      {"proxy-protocol", "send a PROXY protocol header to the service: v1 or v2"},
      {"e2ee", "tcp: true (default) for `burrow connect` end to end, false for a public port"},
      {"visitor-token", "end to end: a token visitors must present"},
      {"kind", "tcp (default) or http (a share URL)"},
      {"mode", "http: blind (default), inspect or passthrough"},
      {"cert", "http blind: your own certificate (PEM), with key"},
      {"key", "the private key of cert (PEM)"},
      {"plain-http", "http blind: also serve http://NAME.DOMAIN in the clear (true or false)"},
      {"basic-auth", "http: USER:PASSWORD or USER:HASH visitors must log in with; a list"},
      {"bearer", "http: tokens visitors must send as Authorization: Bearer; a list"},
      {"require-header", "http: 'Name: value' headers visitors must send; a list"},
      {"allow-ip", "http: networks (CIDR) visitors must come from; a list"},
      {"idle-expiry", "http: release the name after this long without a request"},
      {"expire-in", "http: release the name this long after start"},
      {"acme", "http blind: the ACME directory URL to get the certificate from"},
      {"acme-ca", "PEM file of CAs to trust for the ACME server's HTTPS"},
      {"acme-email", "contact for the ACME account"},
  };
  return help;
}

namespace {

bool parse_switch(const std::string& v, std::string_view where, const char* key) {
  if (v == "true" || v == "on" || v == "yes") return true;
  if (v == "false" || v == "off" || v == "no") return false;
  throw config_error(std::string(where) + ": " + key + " '" + v + "' is not true or false");
}

}  // namespace

service_config make_service(const settings_layer& s, std::string_view where) {
  service_config svc;
  auto get = [&](const char* k) -> const std::string* {
    auto it = s.find(k);
    return it == s.end() ? nullptr : &it->second;
  };
  auto* local = get("local");
  if (!local)
    throw config_error(std::string(where) + ": a service needs 'local' (PORT or HOST:PORT)");
  auto hp = parse_host_port(*local, std::nullopt);
  if (!hp) {
    // A bare port number means 127.0.0.1.
    hp = parse_host_port("127.0.0.1:" + *local, std::nullopt);
  }
  if (!hp || hp->port == 0)
    throw config_error(std::string(where) + ": local '" + *local + "' is not PORT or HOST:PORT");
  if (!hp->host.empty()) svc.local_host = hp->host;
  svc.local_port = hp->port;
  if (auto* r = get("remote-port")) {
    auto p = parse_host_port(":" + *r, std::nullopt);
    if (!p) throw config_error(std::string(where) + ": remote-port '" + *r + "' is not a port");
    svc.remote_port = p->port;
  }
  if (auto* pp = get("proxy-protocol")) {
    auto v = proto::parse_proxy_version(*pp);
    if (!v)
      throw config_error(std::string(where) + ": proxy-protocol '" + *pp + "' is not v1 or v2");
    svc.proxy = *v;
  }
  using proto::tunnel_kind;
  bool e2ee = true;
  if (auto* e = get("e2ee")) e2ee = parse_switch(*e, where, "e2ee");
  svc.kind = e2ee ? tunnel_kind::tcp_e2ee : tunnel_kind::tcp_port;
  if (auto* t = get("visitor-token")) {
    if (!e2ee)
      throw config_error(std::string(where) +
                         ": a visitor token protects end-to-end services; a public port "
                         "(e2ee = false, --no-e2ee) is open to anyone who reaches it");
    if (t->size() < 8 || t->size() > 256)
      throw config_error(std::string(where) + ": the visitor token must be 8 to 256 characters");
    svc.visitor_token = *t;
  }
  std::string kind_name = "tcp";
  if (auto* k = get("kind")) {
    if (*k != "tcp" && *k != "http")
      throw config_error(std::string(where) + ": kind '" + *k + "' is not tcp or http");
    kind_name = *k;
  }
  if (kind_name == "http") {
    svc.kind = tunnel_kind::share_blind;
    if (auto* m = get("mode")) {
      auto mode = proto::share_mode_from_name(*m);
      if (!mode)
        throw config_error(std::string(where) + ": mode '" + *m +
                           "' is not blind (TLS ends at the agent), inspect (TLS ends at the "
                           "relay, which checks and logs each request) or passthrough (a local "
                           "service that speaks TLS itself)");
      svc.kind = *mode;
    }
    if (svc.remote_port || get("visitor-token") || get("e2ee"))
      throw config_error(std::string(where) +
                         ": remote-port, e2ee and visitor-token are for tcp services");
    auto* cert = get("cert");
    auto* key = get("key");
    if ((cert == nullptr) != (key == nullptr))
      throw config_error(std::string(where) + ": cert and key go together: give both, or neither");
    if (cert) {
      if (svc.kind != tunnel_kind::share_blind)
        throw config_error(std::string(where) +
                           ": cert and key are for blind mode; in passthrough mode the local "
                           "service presents its own");
      svc.cert_file = *cert;
      svc.key_file = *key;
    }
    if (auto* a = get("acme")) {
      if (svc.kind != tunnel_kind::share_blind || cert)
        throw config_error(std::string(where) +
                           ": acme is for blind mode without cert and key: the agent then gets "
                           "its certificate from the ACME CA");
      if (!a->starts_with("https://"))
        throw config_error(std::string(where) + ": acme '" + *a +
                           "' is not an https:// ACME directory URL");
      svc.acme_directory = *a;
      if (auto* c = get("acme-ca")) svc.acme_ca = *c;
      if (auto* e = get("acme-email")) svc.acme_email = *e;
    } else if (get("acme-ca") || get("acme-email")) {
      throw config_error(std::string(where) + ": acme-ca and acme-email go with acme");
    }
    if (auto* p = get("plain-http")) {
      svc.plain_http = parse_switch(*p, where, "plain-http");
      if (svc.plain_http && svc.kind != tunnel_kind::share_blind)
        throw config_error(std::string(where) +
                           ": plain-http is for blind mode; a passthrough service speaks TLS");
    }
    auto rules = std::make_shared<http::access_rules>();
    if (auto* v = get("basic-auth"))
      for (auto& item : split_list(*v)) rules->add_basic(http::parse_basic_auth(item));
    if (auto* v = get("bearer"))
      for (auto& item : split_list(*v)) rules->add_bearer(item);
    if (auto* v = get("require-header"))
      for (auto& item : split_list(*v)) rules->add_header(http::parse_required_header(item));
    if (auto* v = get("allow-ip"))
      for (auto& item : split_list(*v)) rules->add_allow_ip(http::parse_cidr(item));
    if (!rules->empty()) {
      if (svc.kind == tunnel_kind::share_passthrough)
        throw config_error(std::string(where) +
                           ": access rules need blind or inspect mode: in passthrough mode no "
                           "one but the local service sees the requests");
      svc.rules = std::move(rules);
    }
    for (auto [key, out] :
         {std::pair{"idle-expiry", &svc.idle_expiry}, std::pair{"expire-in", &svc.expire_in}}) {
      auto* v = get(key);
      if (!v) continue;
      auto d = parse_duration(*v);
      if (!d || d->count() < 0)
        throw config_error(std::string(where) + ": " + key + " '" + *v +
                           "' is not a duration such as 30m or 2h");
      *out = *d;
    }
  } else if (get("mode") || get("cert") || get("key") || get("plain-http") || get("acme") ||
             get("basic-auth") || get("bearer") || get("require-header") || get("allow-ip") ||
             get("idle-expiry") || get("expire-in")) {
    throw config_error(std::string(where) +
                       ": mode, cert, key, plain-http, access rules and expiry are for http "
                       "services");
  }
  if (svc.kind == tunnel_kind::tcp_e2ee && svc.remote_port)
    throw config_error(std::string(where) +
                       ": remote-port is for public ports; end-to-end services have none "
                       "(add --no-e2ee, or e2ee = false, for a public port)");
  if (auto* n = get("name")) {
    svc.name = *n;
    svc.name_given = true;
  } else {
    svc.name = kind_name + "-" + std::to_string(svc.local_port);
  }
  return svc;
}

agent_config make_agent_config(const layered_settings& s, std::vector<service_config> services) {
  agent_config c;
  c.relay = s.text_or("relay", "");
  if (c.relay.empty())
    throw config_error(
        "no relay given: pass --relay HOST:PORT (or set BURROW_RELAY, or 'relay' in "
        "the config file); `burrow relay` prints the exact agent command");
  auto hp = parse_host_port(c.relay, std::uint16_t{7835});
  if (!hp || hp->host.empty() || hp->port == 0)
    throw config_error("relay address '" + c.relay + "' (from " + s.origin("relay") +
                       ") is not HOST:PORT");
  c.token = s.text_or("token", "");
  if (c.token.empty())
    throw config_error(
        "no token given: pass --token (or set BURROW_TOKEN); the relay prints it on "
        "first start and keeps it in its state directory as agent.token");
  if (auto pin = s.text("relay-pin")) {
    auto canonical = tls::normalize_fingerprint(*pin);
    if (!canonical)
      throw config_error("relay pin '" + *pin + "' (from " + s.origin("relay-pin") +
                         ") is not a SHA-256 fingerprint such as sha256:3f1a...");
    c.relay_pin = *canonical;
  }
  c.relay_ca = s.text_or("relay-ca", "");
  c.link_encryption = link::parse_link_encryption_setting(s);
  c.links = static_cast<unsigned>(s.number_or("links", default_links(), 1, 64));
  c.backoff_max = s.duration_or("backoff-max", c.backoff_max);
  if (c.backoff_max < std::chrono::milliseconds(100))
    c.backoff_max = std::chrono::milliseconds(100);
  c.connect_timeout = s.duration_or("connect-timeout", c.connect_timeout);
  c.drain_timeout = s.duration_or("drain-timeout", c.drain_timeout);
  c.e2ee_cert = s.text_or("e2ee-cert", "");
  c.e2ee_key = s.text_or("e2ee-key", "");
  if (c.e2ee_cert.empty() != c.e2ee_key.empty())
    throw config_error("--e2ee-cert and --e2ee-key go together: give both, or neither");
  c.e2ee_session_max_age = s.duration_or("e2ee-session-max-age", c.e2ee_session_max_age);
  if (c.e2ee_session_max_age < std::chrono::seconds(1) ||
      c.e2ee_session_max_age > std::chrono::hours(24))
    throw config_error("e2ee-session-max-age (from " + s.origin("e2ee-session-max-age") +
                       ") must be from 1s to 24h");
  if (auto dir = s.text("state-dir")) c.state_dir = *dir;
  if (services.empty()) throw config_error("no services to expose");
  std::set<std::string> names;
  std::set<std::uint16_t> ports;
  for (auto& svc : services) {
    if (!names.insert(svc.name).second)
      throw config_error("two services are named '" + svc.name + "'; names must differ");
    if (svc.remote_port && !ports.insert(svc.remote_port).second)
      throw config_error("two services ask for remote port " + std::to_string(svc.remote_port));
  }
  c.services = std::move(services);
  return c;
}

}  // namespace burrow::agent
