// Non-ASCII is refused everywhere. Allowing it in strings or on comment lines was tried and the
// fuzzer still reached toml++'s bug: `0"é"` is read as a bare value, a backslash before a
// non-ASCII byte inside a multi-line string takes the same path, and a "comment line" may be a
// multi-line string's content.
#include "core/toml_text.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <stdexcept>

namespace burrow {

std::optional<std::string> toml_text_problem(std::string_view text) {
  std::size_t line = 1, column = 0;
  for (char c : text) {
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      return "line " + std::to_string(line) + ", column " + std::to_string(column) +
             ": a non-ASCII character; burrow reads ASCII TOML only (write other characters in "
             "strings as \\uXXXX escapes, and comments in ASCII)";
    }
  }
  return std::nullopt;
}

namespace {

// The code point of the UTF-8 sequence at text[i] (which is not ASCII), advancing i past it;
// nullopt for a malformed, overlong or surrogate sequence.
std::optional<std::uint32_t> next_code_point(std::string_view text, std::size_t& i) {
  auto lead = static_cast<unsigned char>(text[i]);
  std::size_t length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
  constexpr std::uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
  if (lead < 0xc2 || lead > 0xf4 || text.size() - i < length) return std::nullopt;
  std::uint32_t cp = lead & (0x7f >> length);
  for (std::size_t k = 1; k < length; ++k) {
    auto c = static_cast<unsigned char>(text[i + k]);
    if ((c & 0xc0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (c & 0x3f);
  }
  if (cp < least[length] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return std::nullopt;
  i += length;
  return cp;
}

}  // namespace

std::string toml_quoted(std::string_view text) {
  std::string out = "\"";
  out.reserve(text.size() + 2);
  for (std::size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      auto cp = next_code_point(text, i);
      if (!cp) throw std::invalid_argument("not UTF-8 (byte " + std::to_string(i) + ")");
      out += *cp > 0xffff ? fmt::format("\\U{:08X}", *cp) : fmt::format("\\u{:04X}", *cp);
      continue;
    }
    ++i;
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\u{:04X}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
  return out;
}

}  // namespace burrow
