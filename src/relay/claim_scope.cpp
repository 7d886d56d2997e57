// The token-scope checks every kind's claim starts with: revoked tokens, names, ports and the
// number of services a token may hold.
#include <string>

#include "relay/access_tokens.hpp"
#include "relay/kind_handler.hpp"
#include "relay/token_scope.hpp"

namespace burrow::relay {

namespace {

std::optional<proto::service_result> check_scope(claim_context& c, const proto::service_spec& spec,
                                                 bool by_name,
                                                 std::optional<std::vector<port_range>>* allowed) {
  auto scope = c.tokens.scope(c.grant.id());
  if (c.grant.revoked() || !scope)
    return proto::refused(spec, "not_allowed", "this agent's token has been revoked");
  if (by_name && !scope->allows_name(spec.name))
    return proto::refused(spec, "not_allowed",
                          "this agent's token may not claim the name " + spec.name +
                              " (it may claim " + joined(scope->names) + ")");
  if (!by_name) {
    *allowed = allowed_ranges(*scope, c.relay_ports);
    if (spec.remote_port != 0 && !scope->allows_port(spec.remote_port))
      return proto::refused(
          spec, "not_allowed",
          "this agent's token may not claim port " + std::to_string(spec.remote_port));
  }
  if (scope->max_services != 0) {
    const auto& id = c.grant.id();
    bool again = by_name ? c.names.held_by(spec.name, id) : c.ports.holds(c.owner, spec);
    std::size_t held = c.ports.count(id) + c.names.count(id);
    if (!again && held >= scope->max_services) {
      std::size_t waiting = c.ports.count_in_grace(id) + c.names.count_in_grace(id);
      return proto::refused(
          spec, "too_many_services",
          "this agent's token may hold at most " + std::to_string(scope->max_services) +
              " services and holds " + std::to_string(held) +
              (waiting == 0 ? std::string()
                            : " (" + std::to_string(waiting) +
                                  " of them kept for agents that left, until the relay's --grace "
                                  "period ends or those agents come back)"));
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<proto::service_result> check_name_scope(claim_context& c,
                                                      const proto::service_spec& spec) {
  return check_scope(c, spec, true, nullptr);
}

std::optional<proto::service_result> check_port_scope(
    claim_context& c, const proto::service_spec& spec,
    std::optional<std::vector<port_range>>& allowed) {
  return check_scope(c, spec, false, &allowed);
}

}  // namespace burrow::relay
