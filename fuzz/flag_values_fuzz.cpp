// libFuzzer target: the values flags and configuration files give as text: durations ("1h30m"),
// addresses ("[::1]:80", ":8080") and port ranges ("20000-29999"). Parsing must never crash, and
// what parses must read back the same from the form the program writes it in.
#include <string>
#include <string_view>

#include "core/address.hpp"
#include "core/duration.hpp"
#include "fuzz_check.hpp"

namespace {

using namespace burrow;

using burrow::fuzz::check;

void check_duration(std::string_view text) {
  auto d = parse_duration(text);
  if (!d) return;
  check(d->count() >= 0, "a negative duration");
  auto written = format_duration(*d);
  auto again = parse_duration(written);
  check(again && *again == *d, "a duration read back from its written form differs");
}

void check_address(std::string_view text) {
  for (std::optional<std::uint16_t> default_port : {std::optional<std::uint16_t>{}, {443}}) {
    auto a = parse_host_port(text, default_port);
    if (!a) continue;
    auto again = parse_host_port(format_host_port(a->host, a->port));
    check(again && again->host == a->host && again->port == a->port,
          "an address read back from its written form differs");
    boost::system::error_code ec;
    auto ip = boost::asio::ip::make_address(a->host, ec);
    if (!ec && ip.is_v4()) check(address_text(ip) == ip.to_string(), "an IPv4 address as text");
  }
}

void check_range(std::string_view text) {
  auto r = parse_port_range(text);
  if (!r) return;
  check(r->first <= r->last, "a range that ends before it starts");
  check(r->any() == (r->first == 0 && r->last == 0), "port 0 inside a range");
  std::string written = r->first == r->last
                            ? std::to_string(r->first)
                            : std::to_string(r->first) + "-" + std::to_string(r->last);
  auto again = parse_port_range(written);
  check(again && again->first == r->first && again->last == r->last,
        "a range read back from its written form differs");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return 0;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  check_duration(text);
  check_address(text);
  check_range(text);
  return 0;
}
