// The table of tunnel kinds: one line per kind.
#include "kinds/registry.hpp"

#include <stdexcept>

#include "kinds/share_url/agent_side.hpp"
#include "kinds/share_url/relay_side.hpp"
#include "kinds/tcp_e2ee/agent_side.hpp"
#include "kinds/tcp_e2ee/relay_side.hpp"
#include "kinds/tcp_port/agent_side.hpp"
#include "kinds/tcp_port/relay_side.hpp"

namespace burrow::kinds {

namespace {

using proto::tunnel_kind;

constexpr kind_entry kind_table[] = {
    {tunnel_kind::tcp_port, tcp_port::make_agent_side, tcp_port::relay_side},
    {tunnel_kind::tcp_e2ee, tcp_e2ee::make_agent_side, tcp_e2ee::relay_side},
    {tunnel_kind::share_blind, share_url::make_blind_side, share_url::blind_relay_side},
    {tunnel_kind::share_inspect, share_url::make_inspect_side, share_url::inspect_relay_side},
    {tunnel_kind::share_passthrough, share_url::make_passthrough_side,
     share_url::passthrough_relay_side},
};

}  // namespace

std::span<const kind_entry> all_kinds() {
  return kind_table;
}

const kind_entry& entry_for(proto::tunnel_kind k) {
  for (auto& e : kind_table)
    if (e.kind == k) return e;
  throw std::logic_error("no entry for tunnel kind " + std::string(proto::describe(k)));
}

std::string known_kinds() {
  std::string out;
  for (auto& e : kind_table)
    out += (out.empty() ? "" : ", ") + std::string(proto::describe(e.kind));
  return out;
}

relay::door_action action_at(relay::door door, const relay::name_registry::route& r) {
  return r.found ? relay_side(r.kind).at(door, r) : relay::door_action::not_here;
}

}  // namespace burrow::kinds
