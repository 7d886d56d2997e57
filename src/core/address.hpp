// Listen and dial addresses from flags and configuration: "host:port", "[::1]:port", ":port",
// and port ranges such as "20000-29999".
#pragma once

#include <boost/asio/ip/address.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace burrow {

inline constexpr std::size_t max_address_text = 300;

struct host_port {
  std::string host;  // empty means all interfaces; IPv6 literals without brackets
  std::uint16_t port = 0;
};

// Accepts "host:port", "1.2.3.4:port", "[::1]:port", ":port", and "host" or "[::1]" when a
// default port is given. An IPv6 literal needs brackets, so "::1:80" is rejected as ambiguous.
std::optional<host_port> parse_host_port(std::string_view text,
                                         std::optional<std::uint16_t> default_port = std::nullopt);

// "host:port", with IPv6 literals in brackets: "[::1]:80"; an empty host gives ":80".
std::string format_host_port(std::string_view host, std::uint16_t port);

// `a`, or the IPv4 address inside it when it is IPv4-mapped IPv6 (::ffff:192.0.2.1): how a
// dual-stack socket reports an IPv4 peer.
boost::asio::ip::address unmapped(const boost::asio::ip::address& a);

// An address as text, IPv4-mapped IPv6 written as IPv4: what Asio's to_string() gives, without
// its snprintf for IPv4 (two of them were 8 % of the relay's work per new visitor).
std::string address_text(const boost::asio::ip::address& a);

struct port_range {
  std::uint16_t first = 0, last = 0;
  // Port 0: the kernel picks one.
  bool any() const { return first == 0; }
  // Literal membership: an any() range contains only port 0.
  bool contains(std::uint16_t port) const { return port >= first && port <= last; }
};

// "0" (any), "8080" (one port) or "20000-29999"; rejects first > last and 0 inside a range.
std::optional<port_range> parse_port_range(std::string_view text);

}  // namespace burrow
