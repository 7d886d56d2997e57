// ASCII character classes for the parsers of network and configuration text: no locale, no
// surprises with bytes above 0x7f.
#pragma once

namespace burrow::ascii {

constexpr bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
constexpr bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
constexpr bool is_alnum(char c) {
  return is_digit(c) || is_alpha(c);
}

}  // namespace burrow::ascii
