// End-to-end handshakes inside a link stream: the pin, ALPN, and a deadline on a silent peer.
#include <gtest/gtest.h>
#include <openssl/err.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/deadline.hpp"
#include "e2ee/session.hpp"
#include "link/stream.hpp"

namespace burrow::e2ee {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace std::chrono_literals;

std::string alpn_of(SSL* ssl) {
  const unsigned char* p = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl, &p, &len);
  return std::string(reinterpret_cast<const char*>(p), len);
}

struct contexts {
  asio::ssl::context client = make_client_context();
  asio::ssl::context server = make_server_context(test::test_agent().pair);
};

struct pinned_result {
  error_code client_ec, server_ec;
  int version = 0;
  std::string client_alpn, server_alpn, seen, peer;
  std::string received;
  error_code read_ec;
};

asio::awaitable<pinned_result> pinned(test::link_pair* pair, contexts* ctx) {
  pinned_result r;
  auto open =
      test::open_session(pair, ctx->client.native_handle(), ctx->server.native_handle(), {});
  auto s = co_await std::move(open);
  r.client_ec = s.client_ec;
  r.server_ec = s.server_ec;
  r.version = SSL_version(s.client->native_handle());
  r.client_alpn = alpn_of(s.client->native_handle());
  r.server_alpn = alpn_of(s.server->native_handle());
  r.seen = s.outcome->seen_fingerprint;
  r.peer = tls::peer_fingerprint(s.client->native_handle());
  auto send = test::send_and_close(s.client.get(), "hello agent");
  co_await std::move(send);
  auto read = test::read_to_end(s.server.get(), &r.read_ec);
  r.received = co_await std::move(read);
  co_return r;
}

TEST(E2eeHandshake, PinnedHandshakeAgreesOnTls13AndAlpn) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  contexts ctx;
  auto r = test::run_with_links(ioc, pair, pinned(&pair, &ctx));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->client_ec) << r->client_ec.message();
  EXPECT_FALSE(r->server_ec) << r->server_ec.message();
  EXPECT_EQ(r->version, TLS1_3_VERSION);
  EXPECT_EQ(r->client_alpn, "burrow-e2ee/2");  // own records, preferred by both
  EXPECT_EQ(r->server_alpn, "burrow-e2ee/2");
  EXPECT_EQ(r->seen, test::test_agent().pin);
  EXPECT_EQ(r->peer, test::test_agent().pin);
  EXPECT_EQ(r->received, "hello agent");
  EXPECT_EQ(r->read_ec, asio::error::eof);
}

struct refused_result {
  error_code client_ec, server_ec;
  tls::verification_outcome outcome;
  error_code write_ec, read_ec;
  std::uint64_t server_stream_bytes_after_handshake = 0, server_stream_bytes_at_end = 0;
};

asio::awaitable<refused_result> refused(test::link_pair* pair, SSL_CTX* client_ctx,
                                        SSL_CTX* server_ctx, std::string pin) {
  refused_result r;
  auto open = test::open_session(pair, client_ctx, server_ctx,
                                 {.pin = pin, .cache = nullptr, .cache_key = {}});
  auto s = co_await std::move(open);
  r.client_ec = s.client_ec;
  r.server_ec = s.server_ec;
  r.outcome = *s.outcome;
  r.server_stream_bytes_after_handshake = s.ends.far->bytes_in();
  // A failed session refuses to carry anything afterwards.
  auto write = s.client->write_all(asio::buffer(std::string_view("secret")), r.write_ec);
  co_await std::move(write);
  char buf[64];
  auto read = s.server->read_some(asio::buffer(buf), r.read_ec);
  co_await std::move(read);
  r.server_stream_bytes_at_end = s.ends.far->bytes_in();
  s.client->abort(proto::stream_status::cancelled);
  s.ends.near->finish();
  s.ends.far->finish();
  co_return r;
}

TEST(E2eeHandshake, WrongPinFailsBothSidesBeforeAnyData) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  contexts ctx;
  const std::string wrong = "sha256:" + std::string(64, 'c');
  auto r = test::run_with_links(
      ioc, pair, refused(&pair, ctx.client.native_handle(), ctx.server.native_handle(), wrong));
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->client_ec);
  EXPECT_TRUE(r->server_ec);  // the client's alert reached it
  EXPECT_TRUE(r->outcome.pin_mismatch);
  EXPECT_EQ(r->outcome.seen_fingerprint, test::test_agent().pin);
  EXPECT_EQ(r->outcome.expected_pin, wrong);
  EXPECT_TRUE(r->write_ec);
  EXPECT_TRUE(r->read_ec);
  EXPECT_EQ(r->server_stream_bytes_at_end, r->server_stream_bytes_after_handshake);
}

TEST(E2eeHandshake, ClientWithoutAlpnIsRefused) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  contexts ctx;
  auto no_alpn = tls::make_client_context({});
  auto r = test::run_with_links(
      ioc, pair,
      refused(&pair, no_alpn.native_handle(), ctx.server.native_handle(), test::test_agent().pin));
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->client_ec);
  EXPECT_EQ(ERR_GET_REASON(static_cast<unsigned long>(r->client_ec.value())),
            SSL_R_TLSV1_ALERT_NO_APPLICATION_PROTOCOL)
      << r->client_ec.message();
  EXPECT_TRUE(r->server_ec);
  EXPECT_FALSE(r->outcome.pin_mismatch);
  EXPECT_TRUE(r->outcome.seen_fingerprint.empty());  // refused before any certificate
}

struct silent_result {
  bool finished_in_time = true;
  bool near_reset = false;
};

// The far end never answers; the deadline ends the handshake, and the session is dropped at once.
asio::awaitable<silent_result> silent(test::link_pair* pair, contexts* ctx) {
  silent_result r;
  auto open = pair->open();
  auto ends = co_await std::move(open);
  auto client =
      std::make_unique<secure_stream>(ctx->client.native_handle(), ends.near, tls_role::client);
  tls::verification_outcome outcome;
  tls::apply_peer_verification(client->native_handle(), {test::test_agent().pin, "", ""}, &outcome);
  auto handshake = client->handshake();
  auto bounded = with_deadline(std::move(handshake), 200ms);
  auto result = co_await std::move(bounded);
  r.finished_in_time = result.has_value();
  client->abort(proto::stream_status::cancelled);
  client.reset();  // nothing of the handshake may still be pending
  r.near_reset = ends.near->is_reset();
  ends.near->finish();
  ends.far->finish();
  auto ex = co_await asio::this_coro::executor;
  asio::steady_timer settle(ex, 50ms);
  auto wait = settle.async_wait(asio::use_awaitable);
  co_await std::move(wait);
  co_return r;
}

TEST(E2eeHandshake, DeadlineEndsAHandshakeWithASilentPeer) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  contexts ctx;
  auto r = test::run_with_links(ioc, pair, silent(&pair, &ctx));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->finished_in_time);
  EXPECT_TRUE(r->near_reset);
}

}  // namespace
}  // namespace burrow::e2ee
