// libFuzzer target: splits the input into TLS record runs and sealed frames, the way a link with
// sealed frames reads, and checks that each unit accounts for its bytes and progress is made.

#include "fuzz_check.hpp"
#include "proto/wire_unit.hpp"

namespace {

using namespace burrow::proto;

constexpr std::size_t max_frame = 65536;

using burrow::fuzz::check;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::uint8_t> in(data, size);
  for (;;) {
    const auto u = next_wire_unit(in, max_frame);
    if (u.kind == wire_unit_kind::error || u.kind == wire_unit_kind::incomplete) {
      check(u.size == 0, "a size on error or incomplete");
      check(u.kind == wire_unit_kind::error || in.size() < max_tls_record + max_frame,
            "waiting with more than one whole unit's bytes");
      break;
    }
    check(u.size > 0 && u.size <= in.size(), "size out of range");
    if (u.kind == wire_unit_kind::sealed_frame) {
      check(in[0] == sealed_frame_marker, "sealed frame without its marker");
      const auto& h = u.header;
      check(h.stream_id != 0, "on stream 0");
      check(h.type == frame_type::data
                ? (h.flags == 0 && h.length > 0) || h.flags == flag::fin
                : h.type == frame_type::window && h.flags == 0 && h.length == 4,
            "neither data nor window");
      check(u.header.length <= max_frame, "over max_frame");
      check(u.size == sealed_frame_overhead + u.header.length, "size != overhead + length");
      check(u.payload.data() == in.data() + sealed_frame_overhead, "payload not after the header");
      std::uint8_t again[sealed_frame_overhead];
      encode_sealed_header(h, std::span<std::uint8_t, sealed_frame_overhead>(again));
      for (std::size_t i = 0; i < sealed_frame_overhead; ++i)
        check(again[i] == in[i], "header round trip");
    } else {
      check(in[0] == tls_application_data, "records that do not start as one");
      // The run is made of whole records.
      std::size_t at = 0;
      while (at < u.size) {
        check(u.size - at >= tls_record_header, "a record header cut off");
        std::size_t body = (std::size_t{in[at + 3]} << 8) | in[at + 4];
        check(body > 0 && tls_record_header + body <= max_tls_record, "record length");
        at += tls_record_header + body;
      }
      check(at == u.size, "the run does not end on a record boundary");
    }
    in = in.subspan(u.size);
  }
  return 0;
}
