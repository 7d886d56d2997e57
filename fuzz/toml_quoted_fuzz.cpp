// libFuzzer target: TOML strings as Burrow writes them (core/toml_text.hpp, for tokens.toml). Any
// bytes are either refused as not UTF-8 (std::invalid_argument) or written as an ASCII basic
// string that the ASCII guard accepts and toml++ reads back to exactly those bytes.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/toml.hpp"
#include "core/toml_text.hpp"
#include "fuzz_check.hpp"

using burrow::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string quoted;
  try {
    quoted = burrow::toml_quoted(text);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  std::string doc = "k = " + quoted + "\n";
  check(!burrow::toml_text_problem(doc), "the quoted string is not ASCII");
  toml::table parsed;
  try {
    parsed = toml::parse(doc);
  } catch (const toml::parse_error&) {
    check(false, "toml++ refused the quoted string");
  }
  check(parsed["k"].value<std::string>() == std::string(text), "toml++ read back other text");
  return 0;
}
