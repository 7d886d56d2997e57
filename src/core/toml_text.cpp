// Non-ASCII is refused everywhere. Allowing it in strings or on comment lines was tried and the
// fuzzer still reached toml++'s bug: `0"é"` is read as a bare value, a backslash before a
// non-ASCII byte inside a multi-line string takes the same path, and a "comment line" may be a
// multi-line string's content.
#include "core/toml_text.hpp"

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

}  // namespace burrow
