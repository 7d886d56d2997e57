// libFuzzer target: parse_client_hello on arbitrary bytes, fed whole and as a growing prefix cut
// at pseudo-random points the way reads arrive, which must agree; an accepted hello re-split
// into other record sizes must give the same answer.
#include <string>

#include "fuzz_check.hpp"
#include "proto/client_hello.hpp"

namespace {

using namespace burrow::proto;

// Small, so that the fuzzer reaches the bound as well as everything under it.
constexpr std::size_t max_hello = 4096;

using burrow::fuzz::check;

bool same(const client_hello_result& a, const client_hello_result& b) {
  return a.status == b.status && a.error == b.error && a.consumed == b.consumed &&
         a.server_name == b.server_name && a.alpn == b.alpn &&
         a.record_version == b.record_version && a.legacy_version == b.legacy_version &&
         a.offers_tls13 == b.offers_tls13;
}

// Split points that depend only on the input, so a crash reproduces from its file alone.
std::uint64_t seed_of(const std::uint8_t* data, std::size_t size) {
  std::uint64_t h = 0xcbf29ce484222325;  // FNV-1a
  for (std::size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 0x100000001b3;
  return h;
}

std::uint64_t next(std::uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

// The handshake bytes of records the parser accepted, put back into records of `chunk` bytes.
std::string refragment(std::span<const std::uint8_t> in, std::size_t chunk) {
  std::string message;
  for (std::size_t at = 0; at < in.size();) {
    const std::size_t n = (std::size_t{in[at + 3]} << 8) | in[at + 4];
    message.append(reinterpret_cast<const char*>(in.data()) + at + 5, n);
    at += 5 + n;
  }
  std::string out;
  for (std::size_t at = 0; at < message.size(); at += chunk) {
    const auto part = message.substr(at, chunk);
    out += static_cast<char>(22);
    out += static_cast<char>(in[1]);
    out += static_cast<char>(in[2]);
    out += static_cast<char>(part.size() >> 8);
    out += static_cast<char>(part.size() & 0xFF);
    out += part;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> in(data, size);
  const auto whole = parse_client_hello(in, max_hello);
  switch (whole.status) {
    case hello_parse::ok: {
      check(whole.error == hello_error::none && whole.reason.empty(), "ok with an error");
      check(whole.consumed > tls_record_header_size && whole.consumed <= size, "consumed range");
      if (!whole.server_name.empty())
        check(canonical_host_name(whole.server_name) == whole.server_name, "name not canonical");
      check(whole.alpn.size() <= max_alpn_protocols, "too many ALPN protocols");
      for (const auto& p : whole.alpn) check(!p.empty() && p.size() <= 255, "ALPN name size");
      check(same(parse_client_hello(in.first(whole.consumed), max_hello), whole),
            "bytes after the hello changed the result");
      const auto short_by_one = parse_client_hello(in.first(whole.consumed - 1), max_hello);
      check(short_by_one.status == hello_parse::incomplete, "one byte short is not incomplete");
      check(whole.consumed - 1 + short_by_one.need <= whole.consumed, "need overshoots");
      break;
    }
    case hello_parse::incomplete:
      check(whole.need >= 1, "incomplete without a need");
      check(size < 6 * (4 + max_hello), "incomplete past the most a hello can take");
      check(whole.error == hello_error::none, "incomplete with an error");
      break;
    case hello_parse::invalid:
      check(whole.error != hello_error::none && !whole.reason.empty(), "invalid without reason");
      break;
  }

  // Read by read: growing prefixes are incomplete until the answer the whole input gives.
  auto s = seed_of(data, size) | 1;
  std::size_t end = 0;
  while (end < size) {
    end += 1 + next(s) % (next(s) % 4 == 0 ? 8 : 600);
    if (end > size) end = size;
    const auto part = parse_client_hello(in.first(end), max_hello);
    if (part.status == hello_parse::incomplete) {
      check(end < size || whole.status == hello_parse::incomplete, "prefix incomplete");
      if (whole.status == hello_parse::ok)
        check(end + part.need <= whole.consumed, "need goes past the hello");
      continue;
    }
    check(same(part, whole), "prefix result differs from the whole input's");
    break;
  }

  if (whole.status == hello_parse::ok) {
    const std::size_t chunks[] = {1, 3, 64, tls_max_record_payload};
    const auto again = refragment(in.first(whole.consumed), chunks[next(s) % 4]);
    auto r = parse_client_hello({reinterpret_cast<const std::uint8_t*>(again.data()), again.size()},
                                max_hello);
    check(r.status == hello_parse::ok && r.consumed == again.size(), "refragmented not ok");
    r.consumed = whole.consumed;
    check(same(r, whole), "refragmented hello parses differently");
  }

  const auto kind = sniff_connection(in);
  check((size > 0 && data[0] == 22) == (kind == connection_kind::tls), "sniff disagrees on TLS");
  return 0;
}
