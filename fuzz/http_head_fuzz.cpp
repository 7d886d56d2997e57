// libFuzzer target: request heads as a visitor could send them to the agent's HTTP proxy.
// Parsing must never crash; a head that parses must come out stamped with exactly one of each
// X-Forwarded-* header, stamping the output again must change nothing, and the head passed on as
// it came must say what the full parse writes out again (the same request line and fields).
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_check.hpp"
#include "http/forward_head.hpp"

namespace {

using burrow::fuzz::check;

std::size_t count(std::string_view text, std::string_view needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

// The request line and the fields, in order, as Beast reads them back.
std::vector<std::pair<std::string, std::string>> fields_of(const std::string& head) {
  std::vector<std::pair<std::string, std::string>> out;
  auto parsed = burrow::http::parse_request_head(head);
  if (!parsed) return out;
  out.emplace_back(std::string(parsed->method_string()) + " " + std::string(parsed->target()),
                   std::to_string(parsed->version()));
  for (const auto& field : *parsed) out.emplace_back(field.name_string(), field.value());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const burrow::http::forwarded_for f{"198.51.100.1", "https", "web.burrow.localhost"};
  auto out = burrow::http::rewrite_request_head(text, f);
  auto full = burrow::http::rewrite_request_head_fully(text, f);
  check(out.empty() == full.empty(), "one parse took the head and the other did not");
  if (out.empty()) return 0;
  check(fields_of(out) == fields_of(full), "the head as it came says something else");
  check(count(out, "\r\nX-Forwarded-For: ") == 1 && count(out, "\r\nX-Forwarded-Proto: ") == 1,
        "forwarded headers not stamped exactly once");
  check(burrow::http::rewrite_request_head(out, f) == out, "stamping is not stable");
  return 0;
}
