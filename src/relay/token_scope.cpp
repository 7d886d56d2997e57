// Token scopes: glob matching, port spans and bandwidth rates.
#include "relay/token_scope.hpp"

#include <algorithm>
#include <charconv>

namespace burrow::relay {

bool glob_match(std::string_view pattern, std::string_view name) {
  // Iterative with one backtrack point: linear in practice, never exponential.
  std::size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool valid_name_pattern(std::string_view pattern) {
  if (pattern.empty() || pattern.size() > 63) return false;
  return std::all_of(pattern.begin(), pattern.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
           c == '*';
  });
}

bool token_scope::allows_name(std::string_view name) const {
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& p) { return glob_match(p, name); });
}

bool token_scope::allows_port(std::uint16_t port) const {
  if (ports.empty()) return true;
  return std::any_of(ports.begin(), ports.end(),
                     [&](const port_range& r) { return r.contains(port); });
}

bool token_scope::operator==(const token_scope& o) const {
  auto same = [](const port_range& a, const port_range& b) {
    return a.first == b.first && a.last == b.last;
  };
  return names == o.names && max_services == o.max_services && bandwidth == o.bandwidth &&
         std::equal(ports.begin(), ports.end(), o.ports.begin(), o.ports.end(), same);
}

std::optional<port_range> parse_port_span(std::string_view text) {
  auto range = parse_port_range(text);
  if (!range || range->any()) return std::nullopt;
  return range;
}

std::string format_port_span(port_range r) {
  if (r.first == r.last) return std::to_string(r.first);
  return std::to_string(r.first) + "-" + std::to_string(r.last);
}

std::optional<std::uint64_t> parse_rate(std::string_view text) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  std::string_view rest(end, static_cast<std::size_t>(text.data() + text.size() - end));
  std::uint64_t unit = 1;
  if (!rest.empty() && (rest[0] == 'k' || rest[0] == 'K')) unit = 1000;
  if (!rest.empty() && rest[0] == 'M') unit = 1000 * 1000;
  if (!rest.empty() && rest[0] == 'G') unit = 1000 * 1000 * 1000;
  if (unit != 1) rest.remove_prefix(1);
  if (rest != "" && rest != "B/s" && rest != "/s" && rest != "B") return std::nullopt;
  constexpr std::uint64_t most = 1000ull * 1000 * 1000 * 1000;
  if (value > most / unit) return std::nullopt;
  return value * unit;
}

std::string format_rate(std::uint64_t b) {
  if (b != 0 && b % 1000000000 == 0) return std::to_string(b / 1000000000) + "G";
  if (b != 0 && b % 1000000 == 0) return std::to_string(b / 1000000) + "M";
  if (b != 0 && b % 1000 == 0) return std::to_string(b / 1000) + "k";
  return std::to_string(b);
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string describe(const token_scope& s) {
  // Appends one piece at a time: `"," + string` trips GCC 12's -Wrestrict false positive.
  std::string out = "names ";
  for (std::size_t i = 0; i < s.names.size(); ++i) {
    if (i) out += ',';
    out += s.names[i];
  }
  out += " ports ";
  if (s.ports.empty()) out += "any";
  for (std::size_t i = 0; i < s.ports.size(); ++i) {
    if (i) out += ',';
    out += format_port_span(s.ports[i]);
  }
  out += " services " + (s.max_services ? std::to_string(s.max_services) : std::string("any"));
  out += " bandwidth " + (s.bandwidth ? format_rate(s.bandwidth) + "B/s" : std::string("any"));
  return out;
}

std::optional<std::vector<port_range>> allowed_ranges(const token_scope& scope,
                                                      port_range relay_range) {
  if (scope.ports.empty()) return std::nullopt;
  if (relay_range.any()) return scope.ports;
  std::vector<port_range> out;
  for (auto& r : scope.ports) {
    auto first = std::max(r.first, relay_range.first);
    auto last = std::min(r.last, relay_range.last);
    if (first <= last) out.push_back({first, last});
  }
  return out;
}

}  // namespace burrow::relay
