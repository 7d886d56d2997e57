// libFuzzer target: the link's own records. Opens the input as records from the wire (they must
// fail cleanly, take only whole records and never deliver more than they took), then seals the
// input as plaintext and checks that the other side opens exactly it.
#include <cstring>
#include <vector>

#include "fuzz_check.hpp"
#include "link/record_protection.hpp"

namespace {

using namespace burrow::link;

using burrow::fuzz::check;

bool keys(std::string_view context, std::span<std::uint8_t> out) {
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<std::uint8_t>(i * 13 + context[i % context.size()]);
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto cipher = static_cast<record_cipher>(data[0] % 3);
  std::span<const std::uint8_t> in(data + 1, size - 1);

  record_protection reader(cipher, keys, false, 2);  // a new key every other record
  byte_buffer plain;
  std::size_t used = 0;
  (void)reader.open(in, plain, used);  // any error, as long as the rest holds
  check(used <= in.size(), "took more than it was given");
  check(plain.size() <= used, "delivered more than it took");
  std::size_t at = 0;  // what was taken is whole records
  while (at < used) {
    check(used - at >= 5, "a header cut off");
    at += 5 + ((std::size_t{in[at + 3]} << 8) | in[at + 4]);
  }
  check(at == used, "took part of a record");

  // Into a span too small for some records: it stops before one, and what it opened is what the
  // buffer variant opened up to there.
  record_protection span_reader(cipher, keys, false, 2);
  std::vector<std::uint8_t> room((size * 7) % 20000);
  std::size_t span_used = 0, produced = 0;
  (void)span_reader.open(in, room, span_used, produced);
  check(span_used <= used, "the span variant took more than the buffer variant");
  check(produced <= room.size() && produced <= span_used, "produced more than it could");
  check(produced <= plain.size() &&
            (produced == 0 || std::memcmp(room.data(), plain.data(), produced) == 0),
        "the two variants disagree");

  record_protection dialer(cipher, keys, true, 2), acceptor(cipher, keys, false, 2);
  byte_buffer wire, back;
  check(!dialer.seal(in, wire), "seal failed");
  check(!acceptor.open(wire.bytes(), back, used), "a sealed record did not open");
  check(used == wire.size(), "records left over");
  check(back.size() == in.size() &&
            (in.empty() || std::memcmp(back.data(), in.data(), in.size()) == 0),
        "round trip changed the bytes");
  // A close_notify after the data: it ends the opening, counted in `used`, adding nothing.
  wire.clear();
  check(!dialer.seal_alert(record_alert::close_notify, wire), "sealing an alert failed");
  const std::size_t before = back.size();
  check(acceptor.open(wire.bytes(), back, used) == record_error::close_notify,
        "close_notify not seen");
  check(used == wire.size() && back.size() == before, "close_notify delivered bytes");

  return 0;
}
