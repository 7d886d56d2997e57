// Parsing and formatting of host:port addresses and port ranges.
#include "core/address.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <charconv>

#include "core/ascii.hpp"

namespace burrow {
namespace {

using ascii::is_alnum;
using ascii::is_digit;

std::optional<std::uint16_t> parse_port(std::string_view s) {
  if (s.empty() || s.size() > 5) return std::nullopt;
  std::uint32_t v = 0;
  for (char c : s) {
    if (!is_digit(c)) return std::nullopt;
    v = v * 10 + static_cast<std::uint32_t>(c - '0');
  }
  if (v > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(v);
}

// Host names and IPv4 literals; the resolver decides later whether the name exists.
bool valid_host(std::string_view h) {
  if (h.empty() || h.size() > 253) return false;
  for (char c : h) {
    if (!is_alnum(c) && c != '-' && c != '.' && c != '_') return false;
  }
  return true;
}

// An IPv6 literal, optionally with a zone ("fe80::1%eth0").
bool valid_ipv6(std::string_view h) {
  auto pct = h.find('%');
  auto addr = h.substr(0, pct);
  if (addr.empty() || addr.size() >= INET6_ADDRSTRLEN) return false;
  if (pct != std::string_view::npos) {
    auto zone = h.substr(pct + 1);
    if (zone.empty() || zone.size() > 15) return false;
    for (char c : zone) {
      if (!is_alnum(c) && c != '-' && c != '.' && c != '_') return false;
    }
  }
  char buf[INET6_ADDRSTRLEN];
  addr.copy(buf, addr.size());
  buf[addr.size()] = '\0';
  in6_addr out;
  return inet_pton(AF_INET6, buf, &out) == 1;
}

}  // namespace

std::optional<host_port> parse_host_port(std::string_view text,
                                         std::optional<std::uint16_t> default_port) {
  if (text.empty() || text.size() > max_address_text) return std::nullopt;
  std::string_view host;
  std::string_view rest;  // ":port" or empty
  if (text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = text.substr(1, close - 1);
    if (!valid_ipv6(host)) return std::nullopt;
    rest = text.substr(close + 1);
  } else {
    auto colon = text.find(':');
    if (colon != std::string_view::npos && text.find(':', colon + 1) != std::string_view::npos) {
      return std::nullopt;  // a bare IPv6 literal: the port would be ambiguous
    }
    host = text.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view{} : text.substr(colon);
    if (!host.empty() && !valid_host(host)) return std::nullopt;
  }
  host_port out{std::string(host), 0};
  if (rest.empty()) {
    if (!default_port || host.empty()) return std::nullopt;
    out.port = *default_port;
    return out;
  }
  if (rest.front() != ':') return std::nullopt;
  auto port = parse_port(rest.substr(1));
  if (!port) return std::nullopt;
  out.port = *port;
  return out;
}

boost::asio::ip::address unmapped(const boost::asio::ip::address& a) {
  namespace ip = boost::asio::ip;
  if (a.is_v6() && a.to_v6().is_v4_mapped()) return ip::make_address_v4(ip::v4_mapped, a.to_v6());
  return a;
}

std::string address_text(const boost::asio::ip::address& a) {
  auto u = unmapped(a);
  if (!u.is_v4()) return a.to_string();
  char text[16];
  char* end = text;
  for (auto byte : u.to_v4().to_bytes()) {
    if (end != text) *end++ = '.';
    end = std::to_chars(end, text + sizeof text, byte).ptr;
  }
  return std::string(text, end);
}

std::string format_host_port(std::string_view host, std::uint16_t port) {
  std::string out;
  if (host.find(':') != std::string_view::npos && !host.starts_with('[')) {
    out.reserve(host.size() + 8);
    out += '[';
    out += host;
    out += ']';
  } else {
    out = host;
  }
  out += ':';
  out += std::to_string(port);
  return out;
}

std::optional<port_range> parse_port_range(std::string_view text) {
  if (text.empty() || text.size() > 11) return std::nullopt;
  auto dash = text.find('-');
  if (dash == std::string_view::npos) {
    auto p = parse_port(text);
    if (!p) return std::nullopt;
    return port_range{*p, *p};
  }
  auto first = parse_port(text.substr(0, dash));
  auto last = parse_port(text.substr(dash + 1));
  if (!first || !last || *first == 0 || *first > *last) return std::nullopt;
  return port_range{*first, *last};
}

}  // namespace burrow
