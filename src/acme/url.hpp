// The https URLs an ACME server hands out (its directory, Location headers, an order's links),
// parsed without I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace burrow::acme {

struct https_url {
  std::string host;  // DNS name or IP address, IPv6 without brackets
  std::uint16_t port = 443;
  std::string target;  // path and query, at least "/"

  std::string authority() const;  // for the Host header: "host[:port]", IPv6 in brackets
};

// "https://HOST[:PORT][/PATH]"; nullopt for any other scheme, userinfo, a fragment, an empty
// host, a bad port, or brackets around anything but an IPv6 address (without a zone id).
std::optional<https_url> parse_https_url(std::string_view url);

}  // namespace burrow::acme
