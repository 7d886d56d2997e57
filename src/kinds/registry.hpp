// Every tunnel kind this build knows, one entry each: the kind, the factory of its agent side and
// its relay side. The agent and the relay reach a kind only through its entry.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "agent/agent_config.hpp"
#include "agent/service.hpp"
#include "agent/service_context.hpp"
#include "proto/tunnel_kind.hpp"
#include "relay/kind_handler.hpp"

namespace burrow::kinds {

struct kind_entry {
  proto::tunnel_kind kind;
  // Throws config_error when the service cannot be served as configured.
  std::unique_ptr<agent::service> (*make_agent_service)(agent::service_context&,
                                                        agent::service_config);
  const relay::kind_handler& (*relay_side)();
};

std::span<const kind_entry> all_kinds();
// Every proto::tunnel_kind has one.
const kind_entry& entry_for(proto::tunnel_kind k);

// Every kind's description, for messages: "tcp, tcp end to end, http blind, ...".
std::string known_kinds();

inline const relay::kind_handler& relay_side(proto::tunnel_kind k) {
  return entry_for(k).relay_side();
}

// What the kind of the service a name led to does with a visitor at `door`: not_here when the
// name is held by no one.
relay::door_action action_at(relay::door door, const relay::name_registry::route& r);

}  // namespace burrow::kinds
