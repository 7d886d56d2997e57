// Frame codec: round trips and every rejection the decoder makes.
#include "proto/frame.hpp"

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace burrow::proto {
namespace {

std::vector<std::uint8_t> encode(frame_header h, std::vector<std::uint8_t> payload) {
  h.length = static_cast<std::uint32_t>(payload.size());
  std::vector<std::uint8_t> out(frame_header_size);
  encode_header(h, std::span<std::uint8_t, frame_header_size>(out.data(), frame_header_size));
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

TEST(Frame, DataRoundTrip) {
  auto bytes = encode({0, frame_type::data, flag::fin, 7}, {1, 2, 3});
  auto r = decode_frame(bytes, default_max_frame_payload);
  ASSERT_EQ(r.error, decode_error::none);
  EXPECT_EQ(r.header.type, frame_type::data);
  EXPECT_EQ(r.header.flags, flag::fin);
  EXPECT_EQ(r.header.stream_id, 7u);
  EXPECT_EQ(r.header.length, 3u);
  EXPECT_EQ(r.consumed, bytes.size());
  EXPECT_EQ(std::vector<std::uint8_t>(r.payload.begin(), r.payload.end()),
            (std::vector<std::uint8_t>{1, 2, 3}));
}

TEST(Frame, LargeStreamIdAndLengthRoundTrip) {
  std::vector<std::uint8_t> payload(70000, 0xab);
  auto bytes = encode({0, frame_type::data, 0, 0xfffffffe}, payload);
  auto r = decode_frame(bytes, 1 << 20);
  ASSERT_EQ(r.error, decode_error::none);
  EXPECT_EQ(r.header.stream_id, 0xfffffffeu);
  EXPECT_EQ(r.payload.size(), payload.size());
}

TEST(Frame, TwoFramesBackToBack) {
  auto a = encode({0, frame_type::window, 0, 3}, {0, 0, 1, 0});
  auto b = encode({0, frame_type::ping, 0, 0}, {1, 2, 3, 4, 5, 6, 7, 8});
  a.insert(a.end(), b.begin(), b.end());
  auto r1 = decode_frame(a, default_max_frame_payload);
  ASSERT_EQ(r1.error, decode_error::none);
  EXPECT_EQ(read_u32(r1.payload.data()), 256u);
  auto r2 = decode_frame(std::span(a).subspan(r1.consumed), default_max_frame_payload);
  ASSERT_EQ(r2.error, decode_error::none);
  EXPECT_EQ(r2.header.type, frame_type::ping);
}

TEST(Frame, TruncatedIsIncomplete) {
  auto bytes = encode({0, frame_type::data, 0, 1}, {1, 2, 3, 4});
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    auto r = decode_frame(std::span(bytes).first(n), default_max_frame_payload);
    EXPECT_EQ(r.error, decode_error::incomplete) << n;
  }
}

TEST(Frame, OversizedIsRejectedFromTheHeaderAlone) {
  std::array<std::uint8_t, frame_header_size> h{};
  encode_header({70000, frame_type::data, 0, 1}, h);
  EXPECT_EQ(decode_frame(h, 65536).error, decode_error::too_large);
}

TEST(Frame, UnknownTypeIsRejected) {
  auto bytes = encode({0, frame_type::data, 0, 1}, {});
  bytes[3] = 42;
  EXPECT_EQ(decode_frame(bytes, default_max_frame_payload).error, decode_error::unknown_type);
}

TEST(Frame, StreamFramesNeedAStreamAndLinkFramesNeedNone) {
  EXPECT_EQ(decode_frame(encode({0, frame_type::data, 0, 0}, {1}), 1024).error,
            decode_error::bad_stream_id);
  EXPECT_EQ(decode_frame(encode({0, frame_type::open, 0, 0}, {'{'}), 1024).error,
            decode_error::bad_stream_id);
  EXPECT_EQ(
      decode_frame(encode({0, frame_type::ping, 0, 5}, std::vector<std::uint8_t>(8)), 1024).error,
      decode_error::bad_stream_id);
  EXPECT_EQ(decode_frame(encode({0, frame_type::control, 0, 1}, {'{'}), 1024).error,
            decode_error::bad_stream_id);
}

TEST(Frame, FixedSizePayloadsAreChecked) {
  EXPECT_EQ(decode_frame(encode({0, frame_type::window, 0, 1}, {0, 0, 1}), 1024).error,
            decode_error::bad_payload);
  EXPECT_EQ(decode_frame(encode({0, frame_type::ping, 0, 0}, {1, 2}), 1024).error,
            decode_error::bad_payload);
  EXPECT_EQ(decode_frame(encode({0, frame_type::reset, 0, 1}, {}), 1024).error,
            decode_error::bad_payload);
  EXPECT_EQ(decode_frame(encode({0, frame_type::go_away, 0, 0}, {0, 0, 0}), 1024).error,
            decode_error::bad_payload);
}

}  // namespace
}  // namespace burrow::proto
