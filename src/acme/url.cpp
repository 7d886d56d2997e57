// https URLs from an ACME server, split into host, port and target.
#include "acme/url.hpp"

#include <cctype>
#include <charconv>

#include <boost/asio/ip/address_v6.hpp>

namespace burrow::acme {

std::string https_url::authority() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return port == 443 ? h : h + ":" + std::to_string(port);
}

std::optional<https_url> parse_https_url(std::string_view url) {
  constexpr std::string_view scheme = "https://";
  if (url.size() < scheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(url[i])) != scheme[i]) return std::nullopt;
  url.remove_prefix(scheme.size());
  for (unsigned char c : url)
    if (c <= 0x20 || c >= 0x7f || c == '#') return std::nullopt;
  std::size_t slash = url.find_first_of("/?");
  std::string_view authority = url.substr(0, slash);
  https_url out;
  out.target = slash == std::string_view::npos ? "/" : std::string(url.substr(slash));
  if (out.target.front() == '?') out.target.insert(0, "/");
  if (authority.find('@') != std::string_view::npos) return std::nullopt;
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = authority.substr(1, close - 1);
    // Only an IPv6 address goes in brackets; a zone id means nothing to a CA's server.
    boost::system::error_code ec;
    (void)boost::asio::ip::make_address_v6(std::string(host), ec);
    if (ec || host.find('%') != std::string_view::npos) return std::nullopt;
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      port = rest.substr(1);
      if (port.empty()) return std::nullopt;
    }
  } else if (std::size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (port.empty() || host.find(':') != std::string_view::npos) return std::nullopt;
  }
  if (host.empty() || host.find_first_of("[]") != std::string_view::npos) return std::nullopt;
  if (!port.empty()) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535)
      return std::nullopt;
    out.port = static_cast<std::uint16_t>(value);
  }
  out.host = std::string(host);
  return out;
}

}  // namespace burrow::acme
