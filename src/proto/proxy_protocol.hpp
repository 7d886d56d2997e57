// HAProxy PROXY protocol v1 and v2: the header that tells a local service who the visitor is.
// Pure encode and parse, no I/O; follows haproxy.org/download/2.8/doc/proxy-protocol.txt.
#pragma once

#include <boost/asio/ip/tcp.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace burrow::proto {

enum class proxy_version { none, v1, v2 };

// "none", "v1", "v2", "1" or "2".
std::optional<proxy_version> parse_proxy_version(std::string_view text);

// The header to send before the visitor's bytes; "" for none. When the families differ, IPv4 is
// written as v4-mapped IPv6 so both addresses are TCP6 (v1) or AF_INET6 (v2).
std::string proxy_header(proxy_version v, const boost::asio::ip::tcp::endpoint& source,
                         const boost::asio::ip::tcp::endpoint& destination);

inline constexpr std::size_t proxy_v1_max_length = 107;
inline constexpr std::size_t proxy_v2_header_length = 16;
inline constexpr std::size_t proxy_v2_max_payload = 536;

struct proxy_info {
  // Default-constructed for "PROXY UNKNOWN", the v2 LOCAL command and non-TCP families.
  boost::asio::ip::tcp::endpoint source, destination;
  std::size_t header_length = 0;  // bytes to skip before the visitor's data
};

enum class proxy_parse { ok, incomplete, invalid };

// Parses a v1 or v2 header from the front of `in`. incomplete: everything so far is a valid
// beginning and more bytes are needed; never reads past the bounds of either version.
proxy_parse parse_proxy_header(std::span<const std::uint8_t> in, proxy_info& out);

}  // namespace burrow::proto
