// Sealed frames on a real pair of links: which streams' frames leave the link's TLS, that every
// byte still arrives in order next to the link's records, and what bytes from outside can do.
#include <gtest/gtest.h>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "e2ee/link_pair.hpp"
#include "harness/net.hpp"
#include "link/stream.hpp"
#include "proto/wire_unit.hpp"

namespace burrow::link {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace std::chrono_literals;

asio::awaitable<error_code> send(std::shared_ptr<stream> s, const std::string* data) {
  error_code ec;
  auto write =
      s->write_all({reinterpret_cast<const std::uint8_t*>(data->data()), data->size()}, ec);
  co_await std::move(write);
  if (!ec) s->shutdown_send();
  co_return ec;
}

asio::awaitable<std::string> receive(std::shared_ptr<stream> s) {
  std::string out;
  std::vector<char> buf(64 * 1024);
  for (;;) {
    error_code ec;
    auto read = s->read_some(asio::buffer(buf), ec);
    std::size_t n = co_await std::move(read);
    if (ec) break;
    out.append(buf.data(), n);
  }
  co_return out;
}

struct mixed_result {
  bool near_sealed = false, far_sealed = false, plain_sealed = true;
  std::string sealed_up, plain_up, sealed_down;
  link_counters near, far;
};

// One sealed and one plain stream on the same link, both busy at once, both ways.
asio::awaitable<mixed_result> mixed(test::link_pair* pair, const std::string* big,
                                    const std::string* back) {
  using namespace asio::experimental::awaitable_operators;
  mixed_result r;
  auto opening_sealed = pair->open(true);
  auto a = co_await std::move(opening_sealed);
  auto opening_plain = pair->open(false);
  auto b = co_await std::move(opening_plain);
  r.near_sealed = a.near->sealed();
  r.far_sealed = a.far->sealed();
  r.plain_sealed = b.near->sealed() || b.far->sealed();
  auto [e1, e2, e3, up_a, up_b, down_a] =
      co_await (send(a.near, big) && send(b.near, big) && send(a.far, back) && receive(a.far) &&
                receive(b.far) && receive(a.near));
  r.sealed_up = std::move(up_a);
  r.plain_up = std::move(up_b);
  r.sealed_down = std::move(down_a);
  auto settle = test::pause(100ms);  // the last window frames
  co_await std::move(settle);
  r.near = pair->near().counters();
  r.far = pair->far().counters();
  co_return r;
}

TEST(SealedFrames, SealedAndPlainStreamsShareALinkAndKeepEveryByteInOrder) {
  asio::io_context ioc;
  test::link_pair pair(ioc, {}, link_encryption::tls);
  const std::string big = test::deterministic_bytes(1 << 20, 11);
  const std::string back = test::deterministic_bytes(256 << 10, 12);
  auto r = test::run_with_links(ioc, pair, mixed(&pair, &big, &back));
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->near_sealed);
  EXPECT_TRUE(r->far_sealed);
  EXPECT_FALSE(r->plain_sealed);
  EXPECT_TRUE(r->sealed_up == big);
  EXPECT_TRUE(r->plain_up == big);
  EXPECT_TRUE(r->sealed_down == back);
  // The sealed stream's bytes, and the window frames returning the other way's credit, left the
  // TLS; none of the plain stream's did.
  EXPECT_GE(r->near.sealed_bytes_out, big.size());
  EXPECT_LT(r->near.sealed_bytes_out, big.size() + (64u << 10));
  EXPECT_GE(r->far.sealed_bytes_out, back.size());
  EXPECT_LT(r->far.sealed_bytes_out, back.size() + (64u << 10));
  EXPECT_EQ(r->far.sealed_bytes_in, r->near.sealed_bytes_out);
  EXPECT_EQ(r->near.sealed_bytes_in, r->far.sealed_bytes_out);
  EXPECT_EQ(r->near.stream_errors + r->far.stream_errors, 0u);
}

TEST(SealedFrames, ALinkWithoutThemCarriesASealedStreamInsideItsTls) {
  asio::io_context ioc;
  test::link_pair pair(ioc, {}, link_encryption::full);
  const std::string big = test::deterministic_bytes(300 << 10, 13);
  const std::string back = test::deterministic_bytes(10 << 10, 14);
  auto r = test::run_with_links(ioc, pair, mixed(&pair, &big, &back));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->near_sealed);
  EXPECT_FALSE(r->far_sealed);
  EXPECT_TRUE(r->sealed_up == big);
  EXPECT_TRUE(r->sealed_down == back);
  EXPECT_EQ(r->near.sealed_bytes_out + r->far.sealed_bytes_out, 0u);
}

TEST(SealedFrames, OpenSslsRecordsStillCarryALinkWithAnOlderPeer) {
  // A peer from before the link's own records: hello and welcome leave them out.
  asio::io_context ioc;
  test::link_pair pair(ioc, {}, link_encryption::tls, false);
  const std::string big = test::deterministic_bytes(1 << 20, 15);
  const std::string back = test::deterministic_bytes(256 << 10, 16);
  auto r = test::run_with_links(ioc, pair, mixed(&pair, &big, &back));
  ASSERT_TRUE(r);
  EXPECT_FALSE(pair.near().own_records());
  EXPECT_TRUE(r->sealed_up == big);
  EXPECT_TRUE(r->plain_up == big);
  EXPECT_TRUE(r->sealed_down == back);
  EXPECT_GE(r->near.sealed_bytes_out, big.size());
}

std::string sealed_frame(std::uint32_t id, std::string_view payload) {
  std::string f(proto::sealed_frame_overhead, '\0');
  proto::encode_sealed_header(
      {static_cast<std::uint32_t>(payload.size()), proto::frame_type::data, 0, id},
      std::span<std::uint8_t, proto::sealed_frame_overhead>(
          reinterpret_cast<std::uint8_t*>(f.data()), proto::sealed_frame_overhead));
  return f + std::string(payload);
}

struct injected_result {
  bool sent = false;
  std::string far_ended;
  std::string sealed_got;
};

// Bytes from outside the link's TLS, aimed at `target` (the sealed stream, or the plain one).
asio::awaitable<injected_result> inject(test::link_pair* pair, bool at_sealed,
                                        std::string garbage) {
  injected_result r;
  auto opening_sealed = pair->open(true);
  auto a = co_await std::move(opening_sealed);
  auto opening_plain = pair->open(false);
  auto b = co_await std::move(opening_plain);
  auto settle = test::pause(100ms);
  co_await std::move(settle);
  auto target = at_sealed ? a.near->id() : b.near->id();
  r.sent = pair->inject(garbage.empty() ? sealed_frame(target, "forged") : garbage);
  for (int i = 0; i < 50 && pair->far_ended().empty(); ++i) {
    auto wait = test::pause(20ms);
    co_await std::move(wait);
  }
  r.far_ended = pair->far_ended();
  if (at_sealed && r.far_ended.empty()) {
    // The link cannot tell forged bytes from the peer's: the stream's own TLS has to (see
    // SecureStream.AForgedSealedFrameFailsOnlyItsSessionAndTheLinkLivesOn).
    char buf[64];
    error_code ec;
    auto read = a.far->read_some(asio::buffer(buf), ec);
    std::size_t n = co_await std::move(read);
    r.sealed_got.assign(buf, ec ? 0 : n);
  }
  co_return r;
}

TEST(SealedFrames, ASealedFrameForAPlainStreamEndsTheLink) {
  asio::io_context ioc;
  test::link_pair pair(ioc, {}, link_encryption::tls);
  auto r = test::run_with_links(ioc, pair, inject(&pair, false, ""));
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->sent);
  EXPECT_NE(r->far_ended.find("sealed frame for stream"), std::string::npos) << r->far_ended;
}

TEST(SealedFrames, BytesThatAreNeitherRecordsNorSealedFramesEndTheLink) {
  asio::io_context ioc;
  test::link_pair pair(ioc, {}, link_encryption::tls);
  auto r = test::run_with_links(ioc, pair, inject(&pair, false, "GET / HTTP/1.1\r\n\r\n"));
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->sent);
  EXPECT_NE(r->far_ended.find("neither a TLS record nor a sealed frame"), std::string::npos)
      << r->far_ended;
}

TEST(SealedFrames, AForgedSealedFrameReachesOnlyTheStreamItNames) {
  asio::io_context ioc;
  test::link_pair pair(ioc, {}, link_encryption::tls);
  auto r = test::run_with_links(ioc, pair, inject(&pair, true, ""));
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->sent);
  EXPECT_EQ(r->far_ended, "");
  EXPECT_EQ(r->sealed_got, "forged");
}

TEST(SealedFrames, ALinkWithoutThemTakesNoSealedFrame) {
  asio::io_context ioc;
  test::link_pair pair(ioc, {}, link_encryption::full);
  // The bytes land in the TLS engine, which cannot make a record of them.
  auto r = test::run_with_links(ioc, pair, inject(&pair, true, ""));
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->sent);
  EXPECT_NE(r->far_ended, "");
  EXPECT_EQ(r->far_ended.find("sealed"), std::string::npos) << r->far_ended;
}

// A record that looks right but was not sealed by the peer: the link's own records, and
// OpenSSL's for an older peer, both end the link rather than deliver it.
class ForgedRecord : public ::testing::TestWithParam<bool> {};

TEST_P(ForgedRecord, EndsTheLink) {
  asio::io_context ioc;
  test::link_pair pair(ioc, {}, link_encryption::tls, GetParam());
  std::string record = {23, 3, 3, 0, 40};
  record += test::deterministic_bytes(40, 17);
  auto r = test::run_with_links(ioc, pair, inject(&pair, false, record));
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->sent);
  EXPECT_NE(r->far_ended, "");
  if (GetParam()) {
    EXPECT_NE(r->far_ended.find("failed authentication"), std::string::npos) << r->far_ended;
  }
}

INSTANTIATE_TEST_SUITE_P(OwnOrOpenSsl, ForgedRecord, ::testing::Bool());

}  // namespace
}  // namespace burrow::link
