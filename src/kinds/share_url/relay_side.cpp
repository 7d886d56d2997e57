// Share URLs at the relay: a claim is a DNS label under the relay's domain. Blind and passthrough
// visitors' TLS is carried as it is (to the agent, or on to the service); inspect mode ends TLS
// here and enforces the URL's access rules; plain HTTP is redirected to HTTPS, or, for a blind
// URL that asked for it, carried in the clear.
#include "kinds/share_url/relay_side.hpp"

#include "http/access_rules.hpp"
#include "proto/client_hello.hpp"

namespace burrow::kinds::share_url {

namespace {

using relay::door;
using relay::door_action;

class share_handler : public relay::kind_handler {
 public:
  proto::service_result claim(relay::claim_context& c,
                              const proto::service_spec& spec) const override {
    if (auto refused = relay::check_name_scope(c, spec)) return std::move(*refused);
    if (c.https_port == 0)
      return proto::refused(spec, "no_https",
                            "this relay serves no HTTPS share URLs (it has no --https-listen)");
    auto label = proto::canonical_host_name(spec.name);
    if (!label || *label != spec.name || spec.name.find('.') != std::string::npos)
      return proto::refused(
          spec, "bad_name",
          "a share URL's name is one DNS label: 1-63 lowercase letters, digits or '-'");
    std::shared_ptr<const http::access_rules> rules;
    if (auto refused = enforced_rules(spec, rules)) return std::move(*refused);
    auto r = c.names.claim(c.owner, spec, c.link, std::move(rules));
    if (r.ok)
      r.public_address = "https://" + spec.name + "." + std::string(c.domain) +
                         (c.https_port == 443 ? "" : ":" + std::to_string(c.https_port));
    return r;
  }
  std::string granted(const proto::service_result& r) const override {
    return "is public at " + r.public_address;
  }

 protected:
  // The access rules the relay itself enforces for this URL (inspect mode), or a refusal.
  virtual std::optional<proto::service_result> enforced_rules(
      const proto::service_spec&, std::shared_ptr<const http::access_rules>&) const {
    return std::nullopt;
  }
};

class blind_handler final : public share_handler {
 public:
  door_action at(door d, const relay::name_registry::route& r) const override {
    if (d == door::https) return door_action::carry;
    if (d == door::http) return r.plain_http ? door_action::forward_http : door_action::redirect;
    return door_action::not_here;
  }
  bool signs_certificates() const override { return true; }
};

class passthrough_handler final : public share_handler {
 public:
  door_action at(door d, const relay::name_registry::route&) const override {
    if (d == door::https) return door_action::carry;
    return d == door::http ? door_action::redirect : door_action::not_here;
  }
};

class inspect_handler final : public share_handler {
 public:
  door_action at(door d, const relay::name_registry::route&) const override {
    if (d == door::https) return door_action::end_tls;
    return d == door::http ? door_action::redirect : door_action::not_here;
  }

 protected:
  std::optional<proto::service_result> enforced_rules(
      const proto::service_spec& spec,
      std::shared_ptr<const http::access_rules>& rules) const override {
    if (spec.access.empty()) return std::nullopt;
    try {
      rules =
          std::make_shared<const http::access_rules>(http::access_rules::from_spec(spec.access));
    } catch (const std::exception& e) {
      return proto::refused(spec, "bad_rules", e.what());
    }
    return std::nullopt;
  }
};

}  // namespace

const relay::kind_handler& blind_relay_side() {
  static const blind_handler h;
  return h;
}

const relay::kind_handler& inspect_relay_side() {
  static const inspect_handler h;
  return h;
}

const relay::kind_handler& passthrough_relay_side() {
  static const passthrough_handler h;
  return h;
}

}  // namespace burrow::kinds::share_url
