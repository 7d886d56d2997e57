// libFuzzer target: request heads as a visitor could send them to the agent's HTTP proxy.
// Parsing must never crash; a head that parses must come out stamped with exactly one of each
// X-Forwarded-* header, and stamping the output again must change nothing.
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "http/forward_head.hpp"

namespace {

std::size_t count(std::string_view text, std::string_view needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const burrow::http::forwarded_for f{"198.51.100.1", "https", "web.burrow.localhost"};
  auto out = burrow::http::rewrite_request_head(text, f);
  if (out.empty()) return 0;
  if (count(out, "\r\nX-Forwarded-For: ") != 1 || count(out, "\r\nX-Forwarded-Proto: ") != 1) {
    std::fprintf(stderr, "http_head_fuzz: forwarded headers not stamped exactly once\n");
    std::abort();
  }
  if (burrow::http::rewrite_request_head(out, f) != out) {
    std::fprintf(stderr, "http_head_fuzz: stamping is not stable\n");
    std::abort();
  }
  return 0;
}
