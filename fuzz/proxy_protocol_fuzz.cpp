// libFuzzer target: parse_proxy_header on arbitrary bytes, plus a header round trip built from
// the same bytes, checking the parser's length accounting and its incomplete/ok boundary.
#include <cstring>

#include "fuzz_check.hpp"
#include "proto/proxy_protocol.hpp"

namespace {

using namespace burrow::proto;
namespace ip = boost::asio::ip;

constexpr std::size_t max_header = proxy_v2_header_length + proxy_v2_max_payload;

using burrow::fuzz::check;

std::span<const std::uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

ip::tcp::endpoint endpoint_from(const std::uint8_t* p, bool v6) {
  const auto port = static_cast<std::uint16_t>((p[0] << 8) | p[1]);
  if (v6) {
    ip::address_v6::bytes_type b;
    std::memcpy(b.data(), p + 2, 16);
    return {ip::address_v6(b), port};
  }
  ip::address_v4::bytes_type b;
  std::memcpy(b.data(), p + 2, 4);
  return {ip::address_v4(b), port};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> in(data, size);
  proxy_info info;
  const auto r = parse_proxy_header(in, info);
  if (r == proxy_parse::ok) {
    check(info.header_length > 0 && info.header_length <= size, "header length out of range");
    check(info.header_length <= max_header, "header longer than either version allows");
    proxy_info exact;
    check(parse_proxy_header(in.first(info.header_length), exact) == proxy_parse::ok,
          "the header alone does not parse");
    check(exact.source == info.source && exact.destination == info.destination &&
              exact.header_length == info.header_length,
          "trailing bytes changed the result");
    proxy_info shorter;
    check(parse_proxy_header(in.first(info.header_length - 1), shorter) == proxy_parse::incomplete,
          "one byte short of a header is not incomplete");
  } else if (r == proxy_parse::incomplete) {
    check(size < max_header, "still incomplete past the largest header");
  }

  // Generator round trip: one control byte, then two (port, address) pairs.
  if (size >= 1 + 2 * 18) {
    const bool v2 = data[0] & 1, src6 = data[0] & 2, dst6 = data[0] & 4;
    const auto src = endpoint_from(data + 1, src6), dst = endpoint_from(data + 19, dst6);
    const auto h = proxy_header(v2 ? proxy_version::v2 : proxy_version::v1, src, dst);
    proxy_info back;
    check(parse_proxy_header(bytes(h), back) == proxy_parse::ok, "generated header rejected");
    check(back.header_length == h.size(), "generated header length");
    check(back.source.port() == src.port() && back.destination.port() == dst.port(), "ports");
    if (src6 == dst6) {
      check(back.source.address() == src.address(), "source address round trip");
      check(back.destination.address() == dst.address(), "destination address round trip");
    }
  }
  return 0;
}
