// The tunnel kinds: one line each.
#include "kinds/registry.hpp"

#include <array>
#include <cstdlib>

#include "kinds/share_url/relay_side.hpp"
#include "kinds/tcp_e2ee/relay_side.hpp"
#include "kinds/tcp_port/relay_side.hpp"

namespace burrow::kinds {

namespace {

using proto::tunnel_kind;

constexpr std::array entries{
    kind_entry{tunnel_kind::tcp_port, &tcp_port::relay_side},
    kind_entry{tunnel_kind::tcp_e2ee, &tcp_e2ee::relay_side},
    kind_entry{tunnel_kind::share_blind, &share_url::blind_relay_side},
    kind_entry{tunnel_kind::share_inspect, &share_url::inspect_relay_side},
    kind_entry{tunnel_kind::share_passthrough, &share_url::passthrough_relay_side},
};

}  // namespace

const kind_entry& entry_for(tunnel_kind k) {
  for (const auto& e : entries)
    if (e.kind == k) return e;
  std::abort();  // a tunnel_kind without an entry: tests/kinds/registry_test.cpp catches it
}

relay::door_action action_at(relay::door door, const relay::name_registry::route& r) {
  return r.found ? relay_side(r.kind).at(door, r) : relay::door_action::not_here;
}

}  // namespace burrow::kinds
