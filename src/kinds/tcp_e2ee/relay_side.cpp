// End-to-end TCP: claimed by name (with the hash of the visitor token it asks for), reached only
// through `burrow connect`, whose streams the relay carries as they are: TLS between the visitor
// and the agent.
#include "kinds/tcp_e2ee/relay_side.hpp"

namespace burrow::kinds::tcp_e2ee {

namespace {

class handler final : public relay::kind_handler {
 public:
  proto::service_result claim(relay::claim_context& c,
                              const proto::service_spec& spec) const override {
    if (auto refused = relay::check_name_scope(c, spec)) return std::move(*refused);
    if (!spec.visitor_token_sha256.empty() && spec.visitor_token_sha256.size() != 64)
      return proto::refused(spec, "bad_visitor_token", "visitor_token_sha256 is 64 hex digits");
    return c.names.claim(c.owner, spec, c.link);
  }
  std::string granted(const proto::service_result&) const override {
    return "is reachable end to end by name";
  }
  relay::door_action at(relay::door d, const relay::name_registry::route&) const override {
    return d == relay::door::connect ? relay::door_action::carry : relay::door_action::not_here;
  }
};

}  // namespace

const relay::kind_handler& relay_side() {
  static const handler h;
  return h;
}

}  // namespace burrow::kinds::tcp_e2ee
