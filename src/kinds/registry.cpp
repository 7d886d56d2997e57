// The table of tunnel kinds: one line per kind.
#include "kinds/registry.hpp"

#include <stdexcept>

#include "kinds/share_url/agent_side.hpp"
#include "kinds/tcp_e2ee/agent_side.hpp"
#include "kinds/tcp_port/agent_side.hpp"

namespace burrow::kinds {

namespace {

using proto::tunnel_kind;

constexpr kind_entry kind_table[] = {
    {tunnel_kind::tcp_port, tcp_port::make_agent_side},
    {tunnel_kind::tcp_e2ee, tcp_e2ee::make_agent_side},
    {tunnel_kind::share_blind, share_url::make_blind_side},
    {tunnel_kind::share_inspect, share_url::make_inspect_side},
    {tunnel_kind::share_passthrough, share_url::make_passthrough_side},
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

}  // namespace burrow::kinds
