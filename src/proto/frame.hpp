// The link protocol's binary frame: a 9-byte header (24-bit length, type, flags, 32-bit stream
// id) followed by the payload. Pure encode and decode, no I/O; see docs/protocol.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace burrow::proto {

inline constexpr std::uint32_t protocol_version = 1;
inline constexpr std::size_t frame_header_size = 9;
// Hard ceiling of the encoding (24-bit length); each link negotiates a smaller one.
inline constexpr std::size_t max_frame_payload_encodable = (1u << 24) - 1;
inline constexpr std::size_t default_max_frame_payload = 64 * 1024;
inline constexpr std::size_t max_control_payload = 64 * 1024;

enum class frame_type : std::uint8_t {
  data = 0,         // stream bytes; flag fin = half-close after these bytes
  open = 1,         // open a stream; payload: JSON metadata (service, visitor address, ...)
  open_result = 2,  // answer to open: one status byte, then an optional UTF-8 reason
  window = 3,       // flow-control credit: 4-byte increment for the stream
  reset = 4,        // abort a stream: one status byte, then an optional reason
  ping = 5,         // liveness: 8 opaque bytes; flag ack marks the pong
  go_away = 6,      // sender takes no new streams: 4-byte last stream id, status, reason
  control = 7,      // link-level JSON message on stream 0 (hello, register, error, ...)
  datagram = 8,     // reserved for UDP flows: one datagram per frame
};
inline constexpr std::uint8_t frame_type_count = 9;

namespace flag {
inline constexpr std::uint8_t fin = 0x01;
inline constexpr std::uint8_t ack = 0x01;
}  // namespace flag

// Why an open failed or a stream was reset. Values are on the wire; never renumber.
enum class stream_status : std::uint8_t {
  ok = 0,
  refused = 1,         // the local service refused the connection
  no_service = 2,      // no such service on this agent
  unreachable = 3,     // the local service timed out or its address does not resolve
  overloaded = 4,      // stream limit reached
  forbidden = 5,       // the visitor is not allowed
  protocol_error = 6,  // the peer broke the protocol on this stream
  cancelled = 7,       // the other side went away
  going_away = 8,      // the link is draining
  idle_timeout = 9,    // nothing moved for too long
  internal_error = 10,
};
std::string_view to_string(stream_status s);

struct frame_header {
  std::uint32_t length = 0;
  frame_type type = frame_type::data;
  std::uint8_t flags = 0;
  std::uint32_t stream_id = 0;
};

enum class decode_error : std::uint8_t {
  none,
  incomplete,  // need more bytes; not an error yet
  too_large,   // length over the negotiated limit
  unknown_type,
  bad_stream_id,  // stream frame on stream 0, or link frame on a stream
  bad_payload,    // payload size wrong for the frame type
};
std::string_view to_string(decode_error e);

// Writes the header into out[0..9).
void encode_header(const frame_header& h, std::span<std::uint8_t, frame_header_size> out);

struct decode_result {
  decode_error error = decode_error::none;
  frame_header header{};
  std::span<const std::uint8_t> payload{};
  std::size_t consumed = 0;  // bytes of input used by this frame when error == none
};

// Decodes one frame from the front of `in`, checking everything that does not need stream state.
decode_result decode_frame(std::span<const std::uint8_t> in, std::size_t max_payload);

// Payload helpers for the small fixed-layout frames.
std::uint32_t read_u32(const std::uint8_t* p);
void write_u32(std::uint8_t* p, std::uint32_t v);

}  // namespace burrow::proto
