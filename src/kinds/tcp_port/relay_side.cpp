// A public TCP port: claimed by port within the token's scope, bound by the port registry, whose
// listeners carry each visitor to the agent; nobody reaches it by name.
#include "kinds/tcp_port/relay_side.hpp"

namespace burrow::kinds::tcp_port {

namespace {

class handler final : public relay::kind_handler {
 public:
  proto::service_result claim(relay::claim_context& c,
                              const proto::service_spec& spec) const override {
    std::optional<std::vector<port_range>> allowed;
    if (auto refused = relay::check_port_scope(c, spec, allowed)) return std::move(*refused);
    if (!spec.visitor_token_sha256.empty() && spec.visitor_token_sha256.size() != 64)
      return proto::refused(spec, "bad_visitor_token", "visitor_token_sha256 is 64 hex digits");
    return c.ports.claim(c.owner, spec, c.link, allowed);
  }
  std::string granted(const proto::service_result& r) const override {
    return "is public on port " + std::to_string(r.remote_port);
  }
  relay::door_action at(relay::door, const relay::name_registry::route&) const override {
    return relay::door_action::not_here;
  }
};

}  // namespace

const relay::kind_handler& relay_side() {
  static const handler h;
  return h;
}

}  // namespace burrow::kinds::tcp_port
