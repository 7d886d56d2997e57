// What a service is, as one value: parsed once from flags, TOML or a register message, and never
// compared as text after that. The wire keeps protocol version 1's fields (docs/protocol.md).
#pragma once

#include <optional>
#include <string_view>

namespace burrow::proto {

enum class tunnel_kind {
  tcp_port,           // a public TCP port on the relay; the relay reads the bytes
  tcp_e2ee,           // reached by name through `burrow connect`, TLS between visitor and agent
  share_blind,        // an HTTPS share URL whose TLS ends at the agent
  share_inspect,      // an HTTPS share URL whose TLS ends at the relay, which checks each request
  share_passthrough,  // an HTTPS share URL whose TLS goes on to the local service
};

// How a register message spells a kind: `kind`, `e2ee` and `mode`.
struct wire_kind {
  std::string_view kind;
  bool e2ee = false;
  std::string_view mode;  // empty for tcp kinds
};
wire_kind to_wire(tunnel_kind k);
// Nullopt for a kind or mode this version does not know. An empty mode is blind.
std::optional<tunnel_kind> from_wire(std::string_view kind, bool e2ee, std::string_view mode);

// Names in flags and TOML: `kind = "tcp" | "http"` and, for http, `mode`.
std::optional<tunnel_kind> share_mode_from_name(std::string_view mode);
// For logs and messages: "tcp", "tcp end to end", "http blind", ...
std::string_view describe(tunnel_kind k);

// How a visitor's bytes reach the agent in a stream (open metadata's `scheme`).
enum class visitor_scheme {
  own_tls,      // the visitor's own bytes: TLS it runs with the agent or the service, or plain TCP
  https_ended,  // HTTP/1.1 in the clear: the relay ended the visitor's TLS (inspect mode)
  plain_http,   // HTTP/1.1 in the clear: the visitor came over plain HTTP
};
std::string_view to_wire(visitor_scheme s);
std::optional<visitor_scheme> scheme_from_wire(std::string_view s);

}  // namespace burrow::proto
