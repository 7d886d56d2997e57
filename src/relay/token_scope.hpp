// What an agent token may claim on the relay (service names, public ports, a number of services,
// a bandwidth cap), and the small pure parsers for how an operator writes each of them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/address.hpp"

namespace burrow::relay {

struct token_scope {
  std::vector<std::string> names{"*"};  // glob patterns for end-to-end names and share URLs
  std::vector<port_range> ports;        // public ports; empty: the relay's whole range
  std::uint32_t max_services = 0;       // 0: unlimited
  std::uint64_t bandwidth = 0;          // bytes per second, both directions together; 0: unlimited

  bool allows_name(std::string_view name) const;
  // An explicitly requested public port.
  bool allows_port(std::uint16_t port) const;
  bool operator==(const token_scope& other) const;
};

// `*` matches any run of characters, possibly empty; everything else matches itself.
bool glob_match(std::string_view pattern, std::string_view name);

// A name pattern: 1-63 of lowercase letters, digits, '-', '_', '.' and '*'.
bool valid_name_pattern(std::string_view pattern);

// "20000-20099" or "20000"; never port 0.
std::optional<port_range> parse_port_span(std::string_view text);
std::string format_port_span(port_range r);

// Bytes per second: a count with an optional k, M or G (powers of 1000) and an optional "B/s" or
// "/s": "0", "500000", "800k", "10M", "10MB/s", "1G/s". nullopt if malformed or above 1000G.
std::optional<std::uint64_t> parse_rate(std::string_view text);
// The shortest exact form parse_rate reads back: "10M", "1500k", "123".
std::string format_rate(std::uint64_t bytes_per_second);

// Items separated by ", ", for messages and logs.
std::string joined(const std::vector<std::string>& items);

// The scope on one line, for logs and `burrow relay token list`.
std::string describe(const token_scope& scope);

// The ports within both `scope` and the relay's `relay_range` that a claim may take: nullopt when
// the scope allows the relay's whole range; an empty list when the two do not overlap.
std::optional<std::vector<port_range>> allowed_ranges(const token_scope& scope,
                                                      port_range relay_range);

}  // namespace burrow::relay
