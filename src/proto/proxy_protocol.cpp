// PROXY protocol header encoding and parsing.
#include "proto/proxy_protocol.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace burrow::proto {
namespace {

namespace ip = boost::asio::ip;

constexpr std::array<std::uint8_t, 12> v2_signature{0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                                    0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};
constexpr std::string_view v1_prefix = "PROXY ";

ip::address_v6 as_v6(const ip::address& a) {
  if (a.is_v6()) return ip::address_v6(a.to_v6().to_bytes());  // drop the scope id
  ip::address_v6::bytes_type b{};
  b[10] = 0xFF;
  b[11] = 0xFF;
  const auto v4 = a.to_v4().to_bytes();
  std::copy(v4.begin(), v4.end(), b.begin() + 12);
  return ip::address_v6(b);
}

void put_u16(std::string& out, std::uint16_t v) {
  out += static_cast<char>(v >> 8);
  out += static_cast<char>(v & 0xFF);
}

template <typename Bytes>
void put_bytes(std::string& out, const Bytes& b) {
  out.append(reinterpret_cast<const char*>(b.data()), b.size());
}

// Does `in` start the same way as `prefix` for as long as both last?
bool prefix_matches(std::span<const std::uint8_t> in, std::span<const std::uint8_t> prefix) {
  const auto n = std::min(in.size(), prefix.size());
  return std::equal(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n), prefix.begin());
}

std::optional<std::uint16_t> parse_port(std::string_view s) {
  if (s.empty() || s.size() > 5 || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  std::uint32_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint32_t>(c - '0');
  }
  if (v > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(v);
}

std::optional<ip::address> parse_address(std::string_view s, bool v6) {
  char buf[INET6_ADDRSTRLEN];
  if (s.empty() || s.size() >= sizeof buf) return std::nullopt;
  s.copy(buf, s.size());
  buf[s.size()] = '\0';
  if (v6) {
    ip::address_v6::bytes_type b;
    if (inet_pton(AF_INET6, buf, b.data()) != 1) return std::nullopt;
    return ip::address_v6(b);
  }
  ip::address_v4::bytes_type b;
  if (inet_pton(AF_INET, buf, b.data()) != 1) return std::nullopt;
  return ip::address_v4(b);
}

proxy_parse parse_v1(std::span<const std::uint8_t> in, proxy_info& out) {
  const std::span<const std::uint8_t> prefix(
      reinterpret_cast<const std::uint8_t*>(v1_prefix.data()), v1_prefix.size());
  if (!prefix_matches(in, prefix)) return proxy_parse::invalid;
  // Find the CR of the terminating CRLF; everything before it must be printable ASCII.
  const std::size_t limit = std::min(in.size(), proxy_v1_max_length);
  std::size_t cr = v1_prefix.size();
  while (cr < limit && in[cr] != '\r') {
    if (in[cr] < 0x20 || in[cr] > 0x7E) return proxy_parse::invalid;
    ++cr;
  }
  if (cr + 1 >= proxy_v1_max_length) return proxy_parse::invalid;  // no room left for CRLF
  if (cr + 1 >= in.size()) return proxy_parse::incomplete;
  if (in[cr + 1] != '\n') return proxy_parse::invalid;

  std::string_view line(reinterpret_cast<const char*>(in.data()) + v1_prefix.size(),
                        cr - v1_prefix.size());
  // UNKNOWN: the sender could not tell; the spec says to ignore the rest of the line.
  if (line == "UNKNOWN" || line.starts_with("UNKNOWN ")) {
    out = proxy_info{};
    out.header_length = cr + 2;
    return proxy_parse::ok;
  }
  std::array<std::string_view, 5> tok;
  std::size_t n = 0;
  while (n < tok.size()) {
    const auto sp = line.find(' ');
    tok[n++] = line.substr(0, sp);
    if (sp == std::string_view::npos) {
      line = {};
      break;
    }
    line.remove_prefix(sp + 1);
    if (n == tok.size()) return proxy_parse::invalid;  // more than five fields
  }
  if (n != 5 || (tok[0] != "TCP4" && tok[0] != "TCP6")) return proxy_parse::invalid;
  const bool v6 = tok[0] == "TCP6";
  auto src = parse_address(tok[1], v6);
  auto dst = parse_address(tok[2], v6);
  auto sport = parse_port(tok[3]);
  auto dport = parse_port(tok[4]);
  if (!src || !dst || !sport || !dport) return proxy_parse::invalid;
  out.source = ip::tcp::endpoint(*src, *sport);
  out.destination = ip::tcp::endpoint(*dst, *dport);
  out.header_length = cr + 2;
  return proxy_parse::ok;
}

proxy_parse parse_v2(std::span<const std::uint8_t> in, proxy_info& out) {
  if (!prefix_matches(in, v2_signature)) return proxy_parse::invalid;
  if (in.size() > 12) {
    const auto ver_cmd = in[12];
    if ((ver_cmd >> 4) != 2 || (ver_cmd & 0x0F) > 1) return proxy_parse::invalid;
  }
  if (in.size() > 13) {
    const auto fam = in[13];
    const auto af = fam >> 4, proto = fam & 0x0F;
    if (af > 3 || proto > 2 || ((af == 0) != (proto == 0))) return proxy_parse::invalid;
  }
  if (in.size() < proxy_v2_header_length) return proxy_parse::incomplete;
  const std::size_t len = (std::size_t{in[14]} << 8) | in[15];
  if (len > proxy_v2_max_payload) return proxy_parse::invalid;
  if (in.size() < proxy_v2_header_length + len) return proxy_parse::incomplete;

  const bool local = (in[12] & 0x0F) == 0;
  const auto af = in[13] >> 4;
  const bool stream = (in[13] & 0x0F) == 1;
  // Address block sizes fixed by the spec: INET, INET6, UNIX.
  static constexpr std::array<std::size_t, 4> need{0, 12, 36, 216};
  if (!local && len < need[af]) return proxy_parse::invalid;

  out = proxy_info{};
  out.header_length = proxy_v2_header_length + len;
  // LOCAL (a health check by the proxy itself), UNSPEC, UDP and UNIX carry no TCP endpoints.
  if (local || !stream || (af != 1 && af != 2)) return proxy_parse::ok;

  const std::uint8_t* p = in.data() + proxy_v2_header_length;
  const auto port_at = [](const std::uint8_t* q) {
    return static_cast<std::uint16_t>((q[0] << 8) | q[1]);
  };
  if (af == 1) {
    ip::address_v4::bytes_type s, d;
    std::memcpy(s.data(), p, 4);
    std::memcpy(d.data(), p + 4, 4);
    out.source = ip::tcp::endpoint(ip::address_v4(s), port_at(p + 8));
    out.destination = ip::tcp::endpoint(ip::address_v4(d), port_at(p + 10));
  } else {
    ip::address_v6::bytes_type s, d;
    std::memcpy(s.data(), p, 16);
    std::memcpy(d.data(), p + 16, 16);
    out.source = ip::tcp::endpoint(ip::address_v6(s), port_at(p + 32));
    out.destination = ip::tcp::endpoint(ip::address_v6(d), port_at(p + 34));
  }
  return proxy_parse::ok;
}

}  // namespace

std::optional<proxy_version> parse_proxy_version(std::string_view text) {
  if (text == "none") return proxy_version::none;
  if (text == "v1" || text == "1") return proxy_version::v1;
  if (text == "v2" || text == "2") return proxy_version::v2;
  return std::nullopt;
}

std::string proxy_header(proxy_version v, const ip::tcp::endpoint& source,
                         const ip::tcp::endpoint& destination) {
  const auto src = source.address(), dst = destination.address();
  const bool v4 = src.is_v4() && dst.is_v4();
  std::string out;
  if (v == proxy_version::v1) {
    out = "PROXY ";
    if (v4) {
      out += "TCP4 " + src.to_string() + ' ' + dst.to_string();
    } else {
      out += "TCP6 " + as_v6(src).to_string() + ' ' + as_v6(dst).to_string();
    }
    out += ' ' + std::to_string(source.port()) + ' ' + std::to_string(destination.port()) + "\r\n";
  } else if (v == proxy_version::v2) {
    put_bytes(out, v2_signature);
    out += static_cast<char>(0x21);              // version 2, PROXY
    out += static_cast<char>(v4 ? 0x11 : 0x21);  // TCP over IPv4 or IPv6
    put_u16(out, v4 ? 12 : 36);
    if (v4) {
      put_bytes(out, src.to_v4().to_bytes());
      put_bytes(out, dst.to_v4().to_bytes());
    } else {
      put_bytes(out, as_v6(src).to_bytes());
      put_bytes(out, as_v6(dst).to_bytes());
    }
    put_u16(out, source.port());
    put_u16(out, destination.port());
  }
  return out;
}

proxy_parse parse_proxy_header(std::span<const std::uint8_t> in, proxy_info& out) {
  if (in.empty()) return proxy_parse::incomplete;
  if (in[0] == 'P') return parse_v1(in, out);
  if (in[0] == 0x0D) return parse_v2(in, out);
  return proxy_parse::invalid;
}

}  // namespace burrow::proto
