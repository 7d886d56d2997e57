// libFuzzer target: the relay's tokens file. Parsing must never crash nor throw anything but
// token_file_error, and whatever parses must write and parse again to the same tokens.
#include <string_view>

#include "fuzz_check.hpp"
#include "relay/token_file.hpp"

using burrow::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  burrow::relay::token_file parsed;
  try {
    parsed = burrow::relay::parse_token_file(text, "fuzz.toml");
  } catch (const burrow::relay::token_file_error&) {
    return 0;
  }
  auto again = burrow::relay::parse_token_file(burrow::relay::format_token_file(parsed), "again");
  check(again == parsed, "round trip changed the tokens");
  return 0;
}
