// A secure_stream's ends: half-close, truncation, resets, and how large writes reach the link.
#include "e2ee/secure_stream.hpp"

#include <gtest/gtest.h>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "e2ee/session.hpp"
#include "harness/net.hpp"
#include "link/stream.hpp"
#include "proto/wire_unit.hpp"

namespace burrow::e2ee {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace std::chrono_literals;

// Each test runs on the session's own records (burrow-e2ee/2) and on OpenSSL's (/1).
class SecureStream : public ::testing::TestWithParam<bool> {};

std::string records_name(const ::testing::TestParamInfo<bool>& info) {
  return info.param ? "own" : "OpenSSL";
}

// What a failed record is reported as: our record errors, or OpenSSL's.
const boost::system::error_category& record_failure_category(bool own) {
  return own ? link::record_category() : asio::error::get_ssl_category();
}

asio::awaitable<test::tls_session> session(test::link_pair* pair, test::agent_contexts* ctx) {
  auto open =
      test::open_session(pair, ctx->client.native_handle(), ctx->server.native_handle(), {});
  co_return co_await std::move(open);
}

struct half_close_result {
  error_code handshake_ec;
  std::string request, reply;
  error_code server_read_ec, reply_ec, client_read_ec, write_after_shutdown_ec;
  bool near_reset = true, far_reset = true;
};

asio::awaitable<half_close_result> half_close(test::link_pair* pair, test::agent_contexts* ctx) {
  half_close_result r;
  auto opened = session(pair, ctx);
  auto s = co_await std::move(opened);
  r.handshake_ec = s.client_ec ? s.client_ec : s.server_ec;
  auto request = test::send_and_close(s.client.get(), "request");
  co_await std::move(request);
  auto late =
      s.client->write_all(asio::buffer(std::string_view("late")), r.write_after_shutdown_ec);
  co_await std::move(late);
  // The server sees the whole request and EOF, and only then answers.
  auto read_request = test::read_to_end(s.server.get(), &r.server_read_ec);
  r.request = co_await std::move(read_request);
  auto reply = test::send_and_close(s.server.get(), "reply");
  r.reply_ec = co_await std::move(reply);
  auto read_reply = test::read_to_end(s.client.get(), &r.client_read_ec);
  r.reply = co_await std::move(read_reply);
  s.ends.near->finish();
  s.ends.far->finish();
  r.near_reset = s.ends.near->is_reset();
  r.far_reset = s.ends.far->is_reset();
  co_return r;
}

TEST_P(SecureStream, HalfCloseLetsTheServerAnswerAfterEof) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  test::agent_contexts ctx(GetParam());
  auto r = test::run_with_links(ioc, pair, half_close(&pair, &ctx));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->handshake_ec) << r->handshake_ec.message();
  EXPECT_EQ(r->request, "request");
  EXPECT_EQ(r->server_read_ec, asio::error::eof);
  EXPECT_EQ(r->write_after_shutdown_ec, asio::error::shut_down);
  EXPECT_FALSE(r->reply_ec) << r->reply_ec.message();
  EXPECT_EQ(r->reply, "reply");
  EXPECT_EQ(r->client_read_ec, asio::error::eof);
  // Both directions ended cleanly, so finishing reset neither end.
  EXPECT_FALSE(r->near_reset);
  EXPECT_FALSE(r->far_reset);
}

struct truncation_result {
  std::string received;
  error_code read_ec;
};

asio::awaitable<truncation_result> truncated(test::link_pair* pair, test::agent_contexts* ctx) {
  truncation_result r;
  auto opened = session(pair, ctx);
  auto s = co_await std::move(opened);
  error_code ec;
  auto write = s.server->write_all(asio::buffer(std::string_view("partial")), ec);
  co_await std::move(write);
  s.server->stream().shutdown_send();  // a FIN with no close_notify before it
  auto read = test::read_to_end(s.client.get(), &r.read_ec);
  r.received = co_await std::move(read);
  co_return r;
}

TEST_P(SecureStream, FinWithoutCloseNotifyIsTruncationNotEof) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  test::agent_contexts ctx(GetParam());
  auto r = test::run_with_links(ioc, pair, truncated(&pair, &ctx));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->received, "partial");
  EXPECT_EQ(r->read_ec, asio::ssl::error::stream_truncated) << r->read_ec.message();
}

struct reset_result {
  error_code read_ec, write_ec, later_read_ec;
};

asio::awaitable<reset_result> peer_reset(test::link_pair* pair, test::agent_contexts* ctx) {
  reset_result r;
  auto opened = session(pair, ctx);
  auto s = co_await std::move(opened);
  s.server->abort(proto::stream_status::cancelled);
  char buf[64];
  auto read = s.client->read_some(asio::buffer(buf), r.read_ec);
  co_await std::move(read);
  auto write = s.client->write_all(asio::buffer(std::string_view("anyone?")), r.write_ec);
  co_await std::move(write);
  auto again = s.client->read_some(asio::buffer(buf), r.later_read_ec);
  co_await std::move(again);
  co_return r;
}

TEST_P(SecureStream, PeerResetEndsReadsAndWrites) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  test::agent_contexts ctx(GetParam());
  auto r = test::run_with_links(ioc, pair, peer_reset(&pair, &ctx));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->read_ec, asio::error::connection_reset) << r->read_ec.message();
  EXPECT_EQ(r->write_ec, asio::error::connection_reset) << r->write_ec.message();
  EXPECT_EQ(r->later_read_ec, asio::error::connection_reset);
}

asio::awaitable<error_code> read_one(secure_stream* s) {
  char buf[64];
  error_code ec;
  auto read = s->read_some(asio::buffer(buf), ec);
  co_await std::move(read);
  co_return ec;
}

asio::awaitable<void> abort_soon(secure_stream* s) {
  auto ex = co_await asio::this_coro::executor;
  asio::steady_timer timer(ex, 20ms);
  auto wait = timer.async_wait(asio::use_awaitable);
  co_await std::move(wait);
  s->abort(proto::stream_status::cancelled);
}

asio::awaitable<error_code> local_abort(test::link_pair* pair, test::agent_contexts* ctx) {
  using namespace asio::experimental::awaitable_operators;
  auto opened = session(pair, ctx);
  auto s = co_await std::move(opened);
  auto read = read_one(s.client.get());
  auto abort = abort_soon(s.client.get());
  error_code ec = co_await (std::move(read) && std::move(abort));
  co_return ec;
}

TEST_P(SecureStream, LocalAbortEndsAPendingRead) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  test::agent_contexts ctx(GetParam());
  auto r = test::run_with_links(ioc, pair, local_abort(&pair, &ctx));
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, asio::error::connection_reset) << r->message();
}

struct key_update_result {
  std::string first, answer;
  error_code read_ec;
};

// The peer asks for a key update; OpenSSL answers with our next write, ahead of the records under
// the new keys, so both directions go on.
asio::awaitable<key_update_result> key_update(test::link_pair* pair, test::agent_contexts* ctx) {
  key_update_result r;
  auto opened = session(pair, ctx);
  auto s = co_await std::move(opened);
  SSL_key_update(s.server->native_handle(), SSL_KEY_UPDATE_REQUESTED);
  error_code ec;
  auto write = s.server->write_all(asio::buffer(std::string_view("after update")), ec);
  co_await std::move(write);
  char buf[64];
  auto read = s.client->read_some(asio::buffer(buf), ec);
  std::size_t n = co_await std::move(read);
  r.first.assign(buf, n);
  auto answer = test::send_and_close(s.client.get(), "answer");
  co_await std::move(answer);
  auto read_answer = test::read_to_end(s.server.get(), &r.read_ec);
  r.answer = co_await std::move(read_answer);
  co_return r;
}

TEST(SecureStreamOnOpenSslRecords, PeerRequestedKeyUpdateKeepsBothDirectionsWorking) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  test::agent_contexts ctx(false);  // OpenSSL answers a KeyUpdate
  auto r = test::run_with_links(ioc, pair, key_update(&pair, &ctx));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, "after update");
  EXPECT_EQ(r->answer, "answer");  // decrypts only if our KeyUpdate went out first
  EXPECT_EQ(r->read_ec, asio::error::eof) << r->read_ec.message();
}

struct bad_record_result {
  error_code client_ec, server_ec;
  std::uint64_t sent_by_reader = 0;
};

// A forged record fails the client's read; the alert it owes the peer goes out from the reader.
asio::awaitable<bad_record_result> bad_record(test::link_pair* pair, test::agent_contexts* ctx) {
  bad_record_result r;
  auto opened = session(pair, ctx);
  auto s = co_await std::move(opened);
  // A first record from the server, so that the client's reads are past the server's tickets
  // (which, with own records, OpenSSL would still open).
  error_code ec;
  char buf[64];
  auto hello = s.server->write_all(asio::buffer(std::string_view("hello")), ec);
  co_await std::move(hello);
  auto read_hello = s.client->read_some(asio::buffer(buf), ec);
  co_await std::move(read_hello);
  std::string forged = "\x17\x03\x03" + std::string("\x00\x20", 2) + std::string(32, 'x');
  auto inject = s.ends.far->write_some(asio::buffer(forged), ec);
  co_await std::move(inject);
  auto before = s.ends.near->bytes_out();
  auto read = s.client->read_some(asio::buffer(buf), r.client_ec);
  co_await std::move(read);
  r.sent_by_reader = s.ends.near->bytes_out() - before;
  auto server_read = s.server->read_some(asio::buffer(buf), r.server_ec);
  co_await std::move(server_read);
  co_return r;
}

TEST_P(SecureStream, ForgedRecordFailsTheReadAndAlertsThePeer) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  test::agent_contexts ctx(GetParam());
  auto r = test::run_with_links(ioc, pair, bad_record(&pair, &ctx));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->client_ec.category(), record_failure_category(GetParam())) << r->client_ec.message();
  EXPECT_GT(r->sent_by_reader, 0u);
  EXPECT_EQ(r->server_ec.category(), record_failure_category(GetParam())) << r->server_ec.message();
}

struct large_write_result {
  error_code write_ec, read_ec;
  std::string received;
  std::uint64_t frames = 0;
};

asio::awaitable<error_code> write_then_close(secure_stream* s, const std::string* data) {
  error_code ec;
  auto write = s->write_all(asio::buffer(*data), ec);
  co_await std::move(write);
  if (ec) co_return ec;
  auto shut = s->shutdown_send(ec);
  co_await std::move(shut);
  co_return ec;
}

asio::awaitable<std::string> read_all(secure_stream* s, error_code* ec) {
  auto read = test::read_to_end(s, ec);
  co_return co_await std::move(read);
}

asio::awaitable<large_write_result> large_write(test::link_pair* pair, test::agent_contexts* ctx,
                                                const std::string* payload) {
  using namespace asio::experimental::awaitable_operators;
  large_write_result r;
  auto opened = session(pair, ctx);
  auto s = co_await std::move(opened);
  auto before = pair->near().counters().frames_out;
  auto write = write_then_close(s.client.get(), payload);
  auto read = read_all(s.server.get(), &r.read_ec);
  auto [write_ec, received] = co_await (std::move(write) && std::move(read));
  r.frames = pair->near().counters().frames_out - before;
  r.write_ec = write_ec;
  r.received = std::move(received);
  co_return r;
}

TEST_P(SecureStream, LargeWriteIsCoalescedIntoFewFrames) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  test::agent_contexts ctx(GetParam());
  const std::string payload = test::deterministic_bytes(1 << 20, 5);
  auto r = test::run_with_links(ioc, pair, large_write(&pair, &ctx, &payload));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->write_ec) << r->write_ec.message();
  EXPECT_EQ(r->read_ec, asio::error::eof);
  EXPECT_TRUE(r->received == payload);
  // 64 records of 16 KiB; three records per frame make about 22 frames, plus a few cut short
  // by credit, the close_notify and the FIN.
  EXPECT_LT(r->frames, 40u);
}

struct quiet_result {
  std::size_t busy_client = 0, busy_server = 0, quiet_client = 0, quiet_server = 0;
  std::string echoed;
  std::chrono::milliseconds took{0};
};

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
  asio::steady_timer timer(co_await asio::this_coro::executor, d);
  co_await timer.async_wait(asio::use_awaitable);
}

// Buffers stay while requests flow and go back once the stream has been quiet for a while; the
// session then works as before.
asio::awaitable<quiet_result> quiet(test::link_pair* pair, test::agent_contexts* ctx) {
  quiet_result r;
  auto opened = session(pair, ctx);
  auto s = co_await std::move(opened);
  error_code ec;
  char buf[64];
  for (int i = 0; i < 3; ++i) {
    auto write = s.client->write_all(asio::buffer(std::string_view("request")), ec);
    co_await std::move(write);
    auto read = s.server->read_some(asio::buffer(buf), ec);
    co_await std::move(read);
    auto answer = s.server->write_all(asio::buffer(std::string_view("answer")), ec);
    co_await std::move(answer);
    auto back = s.client->read_some(asio::buffer(buf), ec);
    co_await std::move(back);
  }
  r.busy_client = s.client->buffer_capacity();
  r.busy_server = s.server->buffer_capacity();
  auto started = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - started < 10s &&
         (s.client->buffer_capacity() || s.server->buffer_capacity())) {
    auto pause = sleep_for(100ms);
    co_await std::move(pause);
  }
  r.took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 started);
  r.quiet_client = s.client->buffer_capacity();
  r.quiet_server = s.server->buffer_capacity();
  auto request = test::send_and_close(s.client.get(), "after the quiet");
  co_await std::move(request);
  auto read = test::read_to_end(s.server.get(), &ec);
  r.echoed = co_await std::move(read);
  co_return r;
}

TEST_P(SecureStream, AQuietSessionGivesItsBuffersBackAndABusyOneKeepsThem) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  test::agent_contexts ctx(GetParam());
  auto r = test::run_with_links(ioc, pair, quiet(&pair, &ctx));
  ASSERT_TRUE(r);
  EXPECT_GT(r->busy_client, 0u);
  EXPECT_GT(r->busy_server, 0u);
  // Small requests keep small buffers while busy: reads of 4 KiB, not a whole record's 16.5 KiB
  // (32 KiB once grown to it), with the records' own bytes.
  EXPECT_LE(r->busy_client, 16u * 1024);
  EXPECT_LE(r->busy_server, 16u * 1024);
  // A record at a time is sent from one buffer, not two: 4 KiB each for the reads, the sends and
  // (own records) plaintext opened ahead; before, both ends held 4 KiB more each (24 KiB and
  // 28 KiB between them).
  EXPECT_LE(r->busy_client + r->busy_server, 20u * 1024)
      << r->busy_client << " + " << r->busy_server;
  EXPECT_EQ(r->quiet_client, 0u);
  EXPECT_EQ(r->quiet_server, 0u);
  // Quiet means a second without bytes; the keeper looks once a second.
  EXPECT_GE(r->took, 500ms);
  EXPECT_LT(r->took, 5s);
  EXPECT_EQ(r->echoed, "after the quiet");
}

struct forged_result {
  error_code handshake_ec, forged_read_ec, bystander_ec;
  std::string before, bystander;
  std::string far_ended;
  std::uint64_t sealed_in = 0;
};

// An attacker on the path writes a sealed frame into an end-to-end session's stream: the
// session's own TLS refuses it, and only that session ends.
asio::awaitable<forged_result> forged(test::link_pair* pair, test::agent_contexts* ctx) {
  forged_result r;
  test::session_options options;
  options.sealed = true;
  auto opened =
      test::open_session(pair, ctx->client.native_handle(), ctx->server.native_handle(), options);
  auto s = co_await std::move(opened);
  r.handshake_ec = s.client_ec ? s.client_ec : s.server_ec;
  auto bystander_open = pair->open(false);
  auto bystander = co_await std::move(bystander_open);
  error_code ec;
  auto first = s.client->write_all(asio::buffer(std::string_view("genuine")), ec);
  co_await std::move(first);
  char buf[64];
  auto read = s.server->read_some(asio::buffer(buf), ec);
  std::size_t n = co_await std::move(read);
  r.before.assign(buf, ec ? 0 : n);
  // A record's header and 32 bytes that no key made.
  std::string record = "\x17\x03\x03" + std::string("\x00\x20", 2) + std::string(32, 'x');
  std::string frame(proto::sealed_frame_overhead, '\0');
  proto::encode_sealed_header(
      {static_cast<std::uint32_t>(record.size()), proto::frame_type::data, 0, s.ends.near->id()},
      std::span<std::uint8_t, proto::sealed_frame_overhead>(
          reinterpret_cast<std::uint8_t*>(frame.data()), proto::sealed_frame_overhead));
  pair->inject(frame + record);
  auto forged_read = s.server->read_some(asio::buffer(buf), r.forged_read_ec);
  co_await std::move(forged_read);
  // The link goes on: a plain stream next to it still carries bytes.
  auto write = bystander.near->write_all({reinterpret_cast<const std::uint8_t*>("still here"), 10},
                                         r.bystander_ec);
  co_await std::move(write);
  auto got = bystander.far->read_some(asio::buffer(buf), r.bystander_ec);
  n = co_await std::move(got);
  r.bystander.assign(buf, r.bystander_ec ? 0 : n);
  r.far_ended = pair->far_ended();
  r.sealed_in = pair->far().counters().sealed_bytes_in;
  co_return r;
}

TEST_P(SecureStream, AForgedSealedFrameFailsOnlyItsSessionAndTheLinkLivesOn) {
  asio::io_context ioc;
  test::link_pair pair(ioc, {}, link::link_encryption::tls);
  test::agent_contexts ctx(GetParam());
  auto r = test::run_with_links(ioc, pair, forged(&pair, &ctx));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->handshake_ec) << r->handshake_ec.message();
  EXPECT_EQ(r->before, "genuine");
  EXPECT_GT(r->sealed_in, 0u) << "the session's records did not travel as sealed frames";
  EXPECT_EQ(r->forged_read_ec.category(), record_failure_category(GetParam()))
      << r->forged_read_ec.message();
  EXPECT_FALSE(r->bystander_ec) << r->bystander_ec.message();
  EXPECT_EQ(r->bystander, "still here");
  EXPECT_EQ(r->far_ended, "");
}

INSTANTIATE_TEST_SUITE_P(Records, SecureStream, ::testing::Bool(), records_name);

}  // namespace
}  // namespace burrow::e2ee
