// Settings to forward_config, with every value checked.
#include "forward/forward_settings.hpp"

#include "core/workers.hpp"

namespace burrow::forward {

const std::vector<std::string>& forward_setting_keys() {
  static const std::vector<std::string> keys{
      "proxy-protocol", "source-connections", "source-rate",
      "source-burst",   "connect-timeout",    "drain-timeout",
      "workers",        "log-format",         "log-level"};
  return keys;
}

const std::vector<std::string>& forward_rule_keys() {
  static const std::vector<std::string> keys{"listen", "target", "proxy-protocol"};
  return keys;
}

namespace {

proto::proxy_version proxy_from(const std::string& text) {
  auto v = proto::parse_proxy_version(text);
  if (!v) throw config_error("proxy-protocol must be none, v1 or v2, not '" + text + "'");
  return *v;
}

}  // namespace

forward_config make_forward_config(const layered_settings& s,
                                   const std::vector<settings_layer>& tables,
                                   const std::string& listen, const std::string& target) {
  forward_config c;
  const auto shared_proxy = proxy_from(s.text_or("proxy-protocol", "none"));
  if (!listen.empty() || !target.empty()) {
    if (listen.empty() || target.empty())
      throw config_error("give both LISTEN and TARGET: burrow forward 8080 127.0.0.1:80");
    c.rules.push_back({listen, target, shared_proxy});
  }
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const auto& t = tables[i];
    const auto where = "[[forward]] " + std::to_string(i + 1);
    auto value = [&](const char* key) {
      auto it = t.find(key);
      return it == t.end() ? std::string() : it->second;
    };
    forward_rule rule{value("listen"), value("target"), shared_proxy};
    if (rule.listen.empty() || rule.target.empty())
      throw config_error(where + " needs both listen and target");
    if (t.count("proxy-protocol")) rule.proxy = proxy_from(value("proxy-protocol"));
    c.rules.push_back(std::move(rule));
  }
  if (c.rules.empty())
    throw config_error(
        "nothing to forward: burrow forward LISTEN TARGET, or [[forward]] tables in -c FILE");
  c.limits = source_limits_from(s);
  c.connect_timeout = s.duration_or("connect-timeout", c.connect_timeout);
  c.drain_timeout = s.duration_or("drain-timeout", c.drain_timeout);
  if (c.connect_timeout.count() == 0) throw config_error("connect-timeout must not be 0");
  c.threads = static_cast<unsigned>(s.number_or("workers", usable_cores(), 1, 256));
  return c;
}

}  // namespace burrow::forward
