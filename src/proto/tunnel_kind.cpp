// The one place where tunnel kinds meet their names.
#include "proto/tunnel_kind.hpp"

namespace burrow::proto {

wire_kind to_wire(tunnel_kind k) {
  switch (k) {
    case tunnel_kind::tcp_port:
      return {"tcp", false, ""};
    case tunnel_kind::tcp_e2ee:
      return {"tcp", true, ""};
    case tunnel_kind::share_blind:
      return {"http", false, "blind"};
    case tunnel_kind::share_inspect:
      return {"http", false, "inspect"};
    case tunnel_kind::share_passthrough:
      return {"http", false, "passthrough"};
  }
  return {"tcp", false, ""};
}

std::optional<tunnel_kind> from_wire(std::string_view kind, bool e2ee, std::string_view mode) {
  if (kind == "tcp" && mode.empty()) return e2ee ? tunnel_kind::tcp_e2ee : tunnel_kind::tcp_port;
  if (kind == "http") return mode.empty() ? tunnel_kind::share_blind : share_mode_from_name(mode);
  return std::nullopt;
}

std::optional<tunnel_kind> share_mode_from_name(std::string_view mode) {
  if (mode == "blind") return tunnel_kind::share_blind;
  if (mode == "inspect") return tunnel_kind::share_inspect;
  if (mode == "passthrough") return tunnel_kind::share_passthrough;
  return std::nullopt;
}

std::string_view describe(tunnel_kind k) {
  switch (k) {
    case tunnel_kind::tcp_port:
      return "tcp";
    case tunnel_kind::tcp_e2ee:
      return "tcp end to end";
    case tunnel_kind::share_blind:
      return "http blind";
    case tunnel_kind::share_inspect:
      return "http inspect";
    case tunnel_kind::share_passthrough:
      return "http passthrough";
  }
  return "tcp";
}

std::string_view to_wire(visitor_scheme s) {
  switch (s) {
    case visitor_scheme::own_tls:
      return "";
    case visitor_scheme::https_ended:
      return "https";
    case visitor_scheme::plain_http:
      return "http";
  }
  return "";
}

std::optional<visitor_scheme> scheme_from_wire(std::string_view s) {
  if (s.empty()) return visitor_scheme::own_tls;
  if (s == "https") return visitor_scheme::https_ended;
  if (s == "http") return visitor_scheme::plain_http;
  return std::nullopt;
}

}  // namespace burrow::proto
