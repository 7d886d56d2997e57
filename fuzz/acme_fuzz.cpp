// libFuzzer target: what the ACME client reads from a CA's server before acting on it: URLs (the
// directory's, Location headers, an order's links), problem documents and Retry-After. Parsing
// must never crash; a URL that parses must come back the same from its own parts, and text from
// a problem document, which is logged, must be printable and bounded.
#include <algorithm>
#include <string>
#include <string_view>

#include "acme/https.hpp"  // max_response_body
#include "acme/messages.hpp"
#include "acme/url.hpp"
#include "fuzz_check.hpp"

namespace {

using namespace burrow::acme;

using burrow::fuzz::check;

bool printable_text(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return c >= 0x20 && c < 0x7f; });
}

void check_url(std::string_view text) {
  auto url = parse_https_url(text);
  if (!url) return;
  check(!url->host.empty(), "a URL without a host");
  check(url->port != 0, "a URL with port 0");
  check(!url->target.empty() && url->target.front() == '/', "a target that is not a path");
  check(printable_text(url->host) && printable_text(url->target), "a URL part not printable");
  check(url->host.find_first_of(" /?#@[]") == std::string::npos, "a host with a delimiter");
  check(url->target.find_first_of(" #") == std::string::npos, "a target with a blank or fragment");
  auto again = parse_https_url("https://" + url->authority() + url->target);
  check(
      again && again->host == url->host && again->port == url->port && again->target == url->target,
      "a URL read back from its parts differs");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > max_response_body) return 0;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check_url(text);

  // The status is taken from the first bytes so that it varies too.
  unsigned status = size >= 2 ? static_cast<unsigned>(data[0]) * 256 + data[1] : 400;
  auto described = describe_problem(status, text);
  check(printable_text(described), "a problem described with unprintable text");
  check(described.size() <= 16 + 1 + 123 + 2 + 303, "a problem described at unbounded length");
  auto type = problem_type(text);
  check(printable_text(type) && type.size() <= 123, "a problem type unprintable or unbounded");

  if (auto after = parse_retry_after(text))
    check(after->count() >= 0 && after->count() <= 999'999'999, "a Retry-After out of range");
  return 0;
}
