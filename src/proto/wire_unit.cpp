// Splitting a sealed-frame link's byte stream into runs of TLS records and sealed frames.
#include "proto/wire_unit.hpp"

namespace burrow::proto {

std::string_view to_string(wire_error e) {
  switch (e) {
    case wire_error::none:
      return "none";
    case wire_error::unknown_unit:
      return "neither a TLS record nor a sealed frame";
    case wire_error::bad_record:
      return "malformed TLS record header";
    case wire_error::bad_frame:
      return "malformed sealed frame";
    case wire_error::too_large:
      return "sealed frame too large";
  }
  return "unknown error";
}

namespace {

wire_unit failure(wire_error e) {
  return {wire_unit_kind::error, e};
}

// Whole records from the front; `bad` when a header breaks the rules.
std::size_t record_run(std::span<const std::uint8_t> in, bool& bad) {
  std::size_t run = 0;
  while (in.size() - run >= tls_record_header && in[run] == tls_application_data) {
    const std::uint8_t* h = in.data() + run;
    std::size_t body = (std::size_t{h[3]} << 8) | h[4];
    if (h[1] != 0x03 || h[2] != 0x03 || body == 0 || tls_record_header + body > max_tls_record) {
      bad = run == 0;  // a later bad header is the next call's to report
      break;
    }
    if (in.size() - run < tls_record_header + body) break;
    run += tls_record_header + body;
  }
  return run;
}

}  // namespace

wire_unit next_wire_unit(std::span<const std::uint8_t> in, std::size_t max_frame) {
  if (in.empty()) return {};
  if (in[0] == tls_application_data) {
    if (in.size() >= 3 && (in[1] != 0x03 || in[2] != 0x03)) return failure(wire_error::bad_record);
    bool bad = false;
    std::size_t run = record_run(in, bad);
    if (bad) return failure(wire_error::bad_record);
    if (run == 0) return {};
    return {wire_unit_kind::tls_records, wire_error::none, run};
  }
  if (in[0] != sealed_frame_marker) return failure(wire_error::unknown_unit);
  if (in.size() < sealed_frame_overhead) return {};
  auto frame = decode_frame(in.subspan(1), max_frame);
  if (frame.error == decode_error::too_large) return failure(wire_error::too_large);
  if (frame.error != decode_error::none && frame.error != decode_error::incomplete)
    return failure(wire_error::bad_frame);
  const frame_header& h = frame.header;
  const bool data =
      h.type == frame_type::data && (h.flags == 0 ? h.length > 0 : h.flags == flag::fin);
  const bool window = h.type == frame_type::window && h.flags == 0;  // decode_frame checked 4 bytes
  if (!data && !window) return failure(wire_error::bad_frame);
  if (frame.error == decode_error::incomplete) return {};
  return {wire_unit_kind::sealed_frame, wire_error::none, 1 + frame.consumed, h, frame.payload};
}

void encode_sealed_header(const frame_header& h,
                          std::span<std::uint8_t, sealed_frame_overhead> out) {
  out[0] = sealed_frame_marker;
  encode_header(h, std::span<std::uint8_t, frame_header_size>(out.data() + 1, frame_header_size));
}

}  // namespace burrow::proto
