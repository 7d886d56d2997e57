// A guard in front of toml++: the Debian 12 toml++ (3.3) reaches an unreachable point (undefined
// behaviour; a crash in release builds) on some non-ASCII input, such as a bare key or value or a
// backslash before a non-ASCII character. So configuration and tokens files are ASCII: strings
// can still carry any character as a \uXXXX escape.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace burrow {

// "line L, column C: ..." for the first non-ASCII byte; nullopt when there is none.
std::optional<std::string> toml_text_problem(std::string_view text);

}  // namespace burrow
