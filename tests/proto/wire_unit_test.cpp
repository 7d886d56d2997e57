// Splitting a sealed-frame link's bytes: runs of TLS records, sealed frames, and every rejection.
#include "proto/wire_unit.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace burrow::proto {
namespace {

using bytes = std::vector<std::uint8_t>;

bytes record(std::size_t body, std::uint8_t fill = 0xaa) {
  bytes r(tls_record_header + body, fill);
  r[0] = tls_application_data;
  r[1] = r[2] = 0x03;
  r[3] = static_cast<std::uint8_t>(body >> 8);
  r[4] = static_cast<std::uint8_t>(body);
  return r;
}

bytes sealed(std::uint32_t id, std::size_t n, std::uint8_t fill = 0x55,
             frame_type type = frame_type::data, std::uint8_t flags = 0) {
  bytes f(sealed_frame_overhead + n, fill);
  encode_sealed_header(
      {static_cast<std::uint32_t>(n), type, flags, id},
      std::span<std::uint8_t, sealed_frame_overhead>(f.data(), sealed_frame_overhead));
  return f;
}

bytes join(std::initializer_list<bytes> parts) {
  bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

constexpr std::size_t max_frame = 65536;

TEST(WireUnit, EmptyInputWaits) {
  EXPECT_EQ(next_wire_unit({}, max_frame).kind, wire_unit_kind::incomplete);
}

TEST(WireUnit, ConsecutiveRecordsAreOneRunUpToTheSealedFrame) {
  auto in = join({record(30), record(17), sealed(3, 4), record(20)});
  auto u = next_wire_unit(in, max_frame);
  ASSERT_EQ(u.kind, wire_unit_kind::tls_records);
  EXPECT_EQ(u.size, 35u + 22u);
  auto f = next_wire_unit(std::span(in).subspan(u.size), max_frame);
  ASSERT_EQ(f.kind, wire_unit_kind::sealed_frame);
  EXPECT_EQ(f.size, sealed_frame_overhead + 4);
  EXPECT_EQ(f.header.stream_id, 3u);
  EXPECT_EQ(f.header.type, frame_type::data);
  ASSERT_EQ(f.payload.size(), 4u);
  EXPECT_EQ(f.payload[0], 0x55);
  auto last = next_wire_unit(std::span(in).subspan(u.size + f.size), max_frame);
  ASSERT_EQ(last.kind, wire_unit_kind::tls_records);
  EXPECT_EQ(last.size, 25u);
}

TEST(WireUnit, APartialRecordEndsTheRunAndAloneWaits) {
  auto whole = record(40);
  auto in = join({record(10), bytes(whole.begin(), whole.begin() + 20)});
  auto u = next_wire_unit(in, max_frame);
  ASSERT_EQ(u.kind, wire_unit_kind::tls_records);
  EXPECT_EQ(u.size, 15u);
  for (std::size_t n = 1; n < whole.size(); ++n)
    EXPECT_EQ(next_wire_unit(std::span(whole).first(n), max_frame).kind, wire_unit_kind::incomplete)
        << n;
}

TEST(WireUnit, APartialSealedFrameWaits) {
  auto f = sealed(5, 100);
  for (std::size_t n = 1; n < f.size(); ++n)
    EXPECT_EQ(next_wire_unit(std::span(f).first(n), max_frame).kind, wire_unit_kind::incomplete)
        << n;
  EXPECT_EQ(next_wire_unit(f, max_frame).kind, wire_unit_kind::sealed_frame);
}

TEST(WireUnit, AnOversizedSealedFrameFailsOnItsHeaderAlone) {
  auto f = sealed(5, 10);
  f[1] = 0x01;  // length 65,536 + 10
  auto u = next_wire_unit(std::span(f).first(sealed_frame_overhead), max_frame);
  EXPECT_EQ(u.kind, wire_unit_kind::error);
  EXPECT_EQ(u.error, wire_error::too_large);
}

TEST(WireUnit, DataWithOrWithoutFinAndWindowFramesMayBeSealed) {
  for (const auto& f :
       {sealed(5, 3, 0x55, frame_type::data, flag::fin),
        sealed(5, 0, 0, frame_type::data, flag::fin), sealed(5, 4, 0, frame_type::window)}) {
    auto u = next_wire_unit(f, max_frame);
    ASSERT_EQ(u.kind, wire_unit_kind::sealed_frame);
    EXPECT_EQ(u.size, f.size());
  }
}

TEST(WireUnit, NothingElseMayBeSealed) {
  auto on_zero = sealed(0, 3);
  auto empty = sealed(5, 0);
  auto odd_flags = sealed(5, 3, 0x55, frame_type::data, 0x02);
  auto long_window = sealed(5, 8, 0, frame_type::window);
  auto window_flags = sealed(5, 4, 0, frame_type::window, 0x01);
  auto unknown = sealed(5, 4);
  unknown[1 + 3] = 0x42;
  std::vector<bytes> bad{on_zero, empty, odd_flags, long_window, window_flags, unknown};
  for (auto type : {frame_type::open, frame_type::open_result, frame_type::reset, frame_type::ping,
                    frame_type::go_away, frame_type::control, frame_type::datagram})
    bad.push_back(sealed(
        type == frame_type::ping || type == frame_type::go_away || type == frame_type::control ? 0
                                                                                               : 5,
        type == frame_type::ping ? 8 : 5, 0, type));
  for (const auto& f : bad) {
    auto u = next_wire_unit(f, max_frame);
    EXPECT_EQ(u.kind, wire_unit_kind::error);
    EXPECT_EQ(u.error, wire_error::bad_frame);
  }
}

TEST(WireUnit, BadRecordHeadersAndUnknownBytesFail) {
  auto old_version = record(10);
  old_version[2] = 0x01;
  auto empty = record(0);
  auto huge = record(10);
  huge[3] = 0x48;  // 18,432 bytes: more than TLS 1.3 allows
  for (const auto& r : {old_version, empty, huge}) {
    auto u = next_wire_unit(r, max_frame);
    EXPECT_EQ(u.kind, wire_unit_kind::error);
    EXPECT_EQ(u.error, wire_error::bad_record);
  }
  // A handshake or alert record in the clear, or any other first byte.
  for (std::uint8_t first : {0x16, 0x15, 0x14, 0x01, 0xff}) {
    bytes in{first, 0x03, 0x03, 0x00, 0x05, 1, 2, 3, 4, 5};
    auto u = next_wire_unit(in, max_frame);
    EXPECT_EQ(u.kind, wire_unit_kind::error) << int(first);
    EXPECT_EQ(u.error, wire_error::unknown_unit) << int(first);
  }
  // A bad version is known from the first three bytes.
  auto early = next_wire_unit(std::span(old_version).first(3), max_frame);
  EXPECT_EQ(early.error, wire_error::bad_record);
}

TEST(WireUnit, ABadHeaderAfterGoodRecordsIsReportedWhenItsTurnComes) {
  auto bad = record(10);
  bad[1] = 0x02;
  auto in = join({record(10), bad});
  auto u = next_wire_unit(in, max_frame);
  ASSERT_EQ(u.kind, wire_unit_kind::tls_records);
  EXPECT_EQ(u.size, 15u);
  EXPECT_EQ(next_wire_unit(std::span(in).subspan(u.size), max_frame).error, wire_error::bad_record);
}

TEST(WireUnit, TheLargestRecordTls13AllowsIsWhole) {
  auto r = record((1u << 14) + 256);
  auto u = next_wire_unit(r, max_frame);
  ASSERT_EQ(u.kind, wire_unit_kind::tls_records);
  EXPECT_EQ(u.size, max_tls_record);
}

}  // namespace
}  // namespace burrow::proto
