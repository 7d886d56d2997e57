// What a link with sealed frames carries after the opening exchange: TLS records and sealed
// frames back to back on one TCP connection (docs/protocol.md, section 4b). A sealed frame is a
// data or window frame of a stream whose bytes are already encrypted end to end, sent outside
// the link's TLS: one marker byte, the 9-byte frame header, the payload. Pure parsing, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "proto/frame.hpp"

namespace burrow::proto {

// The first byte of a sealed frame: never a TLS content type.
inline constexpr std::uint8_t sealed_frame_marker = 0x00;
// The outer type of every TLS 1.3 record after the handshake.
inline constexpr std::uint8_t tls_application_data = 0x17;
inline constexpr std::size_t sealed_frame_overhead = 1 + frame_header_size;
inline constexpr std::size_t tls_record_header = 5;
// TLS 1.3 ciphertext: 2^14 bytes of plaintext, its type byte, padding and tag fit in 2^14 + 256.
inline constexpr std::size_t max_tls_record = tls_record_header + (1u << 14) + 256;

enum class wire_unit_kind : std::uint8_t {
  incomplete,   // need more bytes; not an error yet
  tls_records,  // `size` bytes of whole TLS records, one or more
  sealed_frame,
  error,
};

enum class wire_error : std::uint8_t {
  none,
  unknown_unit,  // the first byte is neither a TLS record's type nor the sealed marker
  bad_record,    // a TLS record header that is not TLS 1.3 application data, or too long
  bad_frame,     // a sealed frame that is not a data frame (bytes, or a fin) or a window frame
  too_large,     // a sealed frame longer than the link's max_frame
};
std::string_view to_string(wire_error e);

struct wire_unit {
  wire_unit_kind kind = wire_unit_kind::incomplete;
  wire_error error = wire_error::none;
  std::size_t size = 0;   // bytes of input this unit takes (tls_records, sealed_frame)
  frame_header header{};  // sealed_frame
  std::span<const std::uint8_t> payload{};  // sealed_frame
};

// The unit at the front of `in`: for records, the whole run of complete records that starts
// there (a sealed frame or an incomplete record ends it). Everything a header decides is checked
// before its body arrives, so a bad length never makes the caller wait for it.
wire_unit next_wire_unit(std::span<const std::uint8_t> in, std::size_t max_frame);

// Writes a sealed frame's marker and header into out[0..10).
void encode_sealed_header(const frame_header& h,
                          std::span<std::uint8_t, sealed_frame_overhead> out);

}  // namespace burrow::proto
