// The relay's side of one tunnel kind: how a service of that kind is claimed, and what is done
// with a visitor who comes for it by name. One object per kind (src/kinds/*/relay_side.cpp),
// found through src/kinds/registry.cpp; the relay's core never asks which kind a service is.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "proto/control.hpp"
#include "relay/name_registry.hpp"
#include "relay/port_registry.hpp"

namespace burrow::relay {

class access_tokens;
class token_grant;

// What one claim may use: who asks, the registries, and the relay's settings. Used with the
// relay's claims mutex held, so a scope check and the claim it allows happen as one.
struct claim_context {
  const owner_id& owner;
  const token_grant& grant;
  access_tokens& tokens;
  port_registry& ports;
  name_registry& names;
  const std::shared_ptr<link::link>& link;
  port_range relay_ports;    // --port-range
  std::string_view domain;   // share URLs are NAME.DOMAIN
  std::uint16_t https_port;  // 0: no HTTPS listener
};

// Where a visitor asks for a service by name.
enum class door {
  connect,  // a stream from `burrow connect`
  https,    // the HTTPS listener, by the ClientHello's server name
  http,     // the plain HTTP listener, by the Host header
};

// What a kind does with a visitor at a door.
enum class door_action {
  not_here,      // not reached this way: the visitor hears there is no such service
  carry,         // a stream to the agent carries the visitor's bytes as they are
  end_tls,       // TLS ends at the relay, which checks each request and forwards it in the clear
  redirect,      // plain HTTP is answered with a redirect to the HTTPS share URL
  forward_http,  // plain HTTP goes on to the agent in the clear
};

class kind_handler {
 public:
  virtual ~kind_handler() = default;
  // Checks `spec` against the token's scope and claims it; a refusal says why.
  virtual proto::service_result claim(claim_context& c, const proto::service_spec& spec) const = 0;
  // For the log, after a granted claim: "is public on port 20000", ...
  virtual std::string granted(const proto::service_result& r) const = 0;
  virtual door_action at(door d, const name_registry::route& r) const = 0;
  // Whether the relay's CA signs a certificate for a name of this kind (blind share URLs).
  virtual bool signs_certificates() const { return false; }
};

// The scope checks a kind's claim starts with: a refusal if the token may not claim `spec` by
// its name (end-to-end names, share URLs) or by its port; with `allowed` set to the ports it may
// take (nullopt: any).
std::optional<proto::service_result> check_name_scope(claim_context& c,
                                                      const proto::service_spec& spec);
std::optional<proto::service_result> check_port_scope(
    claim_context& c, const proto::service_spec& spec,
    std::optional<std::vector<port_range>>& allowed);

}  // namespace burrow::relay
