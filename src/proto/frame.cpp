// Frame header encoding and validation for the link protocol.
#include "proto/frame.hpp"

namespace burrow::proto {

std::string_view to_string(stream_status s) {
  switch (s) {
    case stream_status::ok:
      return "ok";
    case stream_status::refused:
      return "connection refused by the local service";
    case stream_status::no_service:
      return "no such service";
    case stream_status::unreachable:
      return "local service unreachable";
    case stream_status::overloaded:
      return "too many streams";
    case stream_status::forbidden:
      return "forbidden";
    case stream_status::protocol_error:
      return "protocol error";
    case stream_status::cancelled:
      return "cancelled";
    case stream_status::going_away:
      return "going away";
    case stream_status::idle_timeout:
      return "idle timeout";
    case stream_status::internal_error:
      return "internal error";
  }
  return "unknown status";
}

std::string_view to_string(decode_error e) {
  switch (e) {
    case decode_error::none:
      return "none";
    case decode_error::incomplete:
      return "incomplete frame";
    case decode_error::too_large:
      return "frame too large";
    case decode_error::unknown_type:
      return "unknown frame type";
    case decode_error::bad_stream_id:
      return "frame on the wrong stream id";
    case decode_error::bad_payload:
      return "malformed frame payload";
  }
  return "unknown error";
}

std::uint32_t read_u32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

void write_u32(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 24);
  p[1] = static_cast<std::uint8_t>(v >> 16);
  p[2] = static_cast<std::uint8_t>(v >> 8);
  p[3] = static_cast<std::uint8_t>(v);
}

void encode_header(const frame_header& h, std::span<std::uint8_t, frame_header_size> out) {
  out[0] = static_cast<std::uint8_t>(h.length >> 16);
  out[1] = static_cast<std::uint8_t>(h.length >> 8);
  out[2] = static_cast<std::uint8_t>(h.length);
  out[3] = static_cast<std::uint8_t>(h.type);
  out[4] = h.flags;
  write_u32(out.data() + 5, h.stream_id);
}

namespace {

bool is_link_frame(frame_type t) {
  return t == frame_type::ping || t == frame_type::go_away || t == frame_type::control;
}

// Payload sizes that the frame type fixes; anything else is a protocol error.
bool payload_fits(frame_type t, std::uint32_t len) {
  switch (t) {
    case frame_type::window:
      return len == 4;
    case frame_type::ping:
      return len == 8;
    case frame_type::open_result:
    case frame_type::reset:
      return len >= 1 && len <= 1024;
    case frame_type::go_away:
      return len >= 5 && len <= 1024 + 5;
    case frame_type::open:
    case frame_type::control:
      return len >= 1 && len <= max_control_payload;
    case frame_type::data:
    case frame_type::datagram:
      return true;
  }
  return false;
}

}  // namespace

decode_result decode_frame(std::span<const std::uint8_t> in, std::size_t max_payload) {
  decode_result r;
  if (in.size() < frame_header_size) {
    r.error = decode_error::incomplete;
    return r;
  }
  r.header.length = (std::uint32_t{in[0]} << 16) | (std::uint32_t{in[1]} << 8) | in[2];
  if (in[3] >= frame_type_count) {
    r.error = decode_error::unknown_type;
    return r;
  }
  r.header.type = static_cast<frame_type>(in[3]);
  r.header.flags = in[4];
  r.header.stream_id = read_u32(in.data() + 5);
  if (r.header.length > max_payload) {
    r.error = decode_error::too_large;
    return r;
  }
  if (is_link_frame(r.header.type) != (r.header.stream_id == 0)) {
    r.error = decode_error::bad_stream_id;
    return r;
  }
  if (!payload_fits(r.header.type, r.header.length)) {
    r.error = decode_error::bad_payload;
    return r;
  }
  if (in.size() < frame_header_size + r.header.length) {
    r.error = decode_error::incomplete;
    return r;
  }
  r.payload = in.subspan(frame_header_size, r.header.length);
  r.consumed = frame_header_size + r.header.length;
  return r;
}

}  // namespace burrow::proto
