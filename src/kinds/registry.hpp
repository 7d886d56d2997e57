// Every tunnel kind, with its handlers: the one list a new kind is added to.
#pragma once

#include "proto/tunnel_kind.hpp"
#include "relay/kind_handler.hpp"

namespace burrow::kinds {

struct kind_entry {
  proto::tunnel_kind kind;
  const relay::kind_handler& (*relay_side)();
};

// The entry for `k`; every tunnel_kind has one.
const kind_entry& entry_for(proto::tunnel_kind k);

inline const relay::kind_handler& relay_side(proto::tunnel_kind k) {
  return entry_for(k).relay_side();
}

// What the kind of the service a name led to does with a visitor at `door`: not_here when the
// name is held by no one.
relay::door_action action_at(relay::door door, const relay::name_registry::route& r);

}  // namespace burrow::kinds
