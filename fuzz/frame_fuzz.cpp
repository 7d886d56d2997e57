// libFuzzer target: decodes the input as a stream of link frames, the way a link's reader does,
// and checks that every frame accounts for its bytes and the decoder always makes progress.

#include "fuzz_check.hpp"
#include "proto/frame.hpp"

namespace {

using namespace burrow::proto;

constexpr std::size_t max_payload = 65536;

using burrow::fuzz::check;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::uint8_t> in(data, size);
  for (;;) {
    const auto r = decode_frame(in, max_payload);
    if (r.error != decode_error::none) {
      check(r.consumed == 0, "consumed bytes on error");
      if (r.error == decode_error::incomplete) {
        check(in.size() < frame_header_size || in.size() < frame_header_size + r.header.length,
              "incomplete although the whole frame is there");
      }
      break;  // a link closes on any error; incomplete waits for more bytes
    }
    check(r.consumed >= frame_header_size, "no progress");
    check(r.consumed <= in.size(), "consumed past the input");
    check(r.consumed == frame_header_size + r.header.length, "consumed != header + length");
    check(r.header.length <= max_payload, "payload over the limit");
    check(r.payload.size() == r.header.length, "payload size != length");
    check(r.payload.data() == in.data() + frame_header_size, "payload not after the header");
    // Re-encoding the decoded header gives back the same nine bytes.
    std::uint8_t again[frame_header_size];
    encode_header(r.header, std::span<std::uint8_t, frame_header_size>(again));
    for (std::size_t i = 0; i < frame_header_size; ++i)
      check(again[i] == in[i], "header round trip");
    // One byte short of a valid frame is always "wait for more".
    check(decode_frame(in.first(r.consumed - 1), max_payload).error == decode_error::incomplete,
          "a truncated valid frame is not incomplete");
    in = in.subspan(r.consumed);
  }
  return 0;
}
