// An HTTPS visitor's session stays on OpenSSL's records after the handshake: a web server's
// secure_stream never takes them over (our own records are for peers that are Burrow). Each
// TLS 1.3 suite; the client's KeyUpdate, followed and answered when it asks; padded records; a
// resumed session; TLS 1.2; and a forged record, answered with OpenSSL's alert. Real loopback
// sockets.
#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <string>
#include <vector>

#include "e2ee/secure_stream.hpp"
#include "e2ee/session.hpp"
#include "e2ee/socket_session.hpp"
#include "harness/net.hpp"

namespace burrow::e2ee::web_records {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;

struct talk_result {
  error_code handshake_ec, ec, server_end_ec, client_end_ec;
  bool server_own = false, client_own = false, resumed = false;
  // Whether the server still had OpenSSL's session: after the handshake, and after the talk.
  bool server_ssl_after_handshake = false, server_ssl_after_talk = false;
  int rounds_done = 0;
  int key_updates_to_client = 0;  // KeyUpdate messages the client received
};

constexpr int no_key_update = -1;

// Counts the KeyUpdate messages the client receives (its message callback's argument).
void count_key_updates(int write_p, int, int content_type, const void* buf, size_t len, SSL*,
                       void* arg) {
  const auto* p = static_cast<const unsigned char*>(buf);
  if (!write_p && content_type == SSL3_RT_HANDSHAKE && len > 0 && p[0] == SSL3_MT_KEY_UPDATE)
    ++*static_cast<int*>(arg);
}

asio::awaitable<error_code> read_exactly(secure_stream* s, std::string* out, std::size_t n) {
  error_code ec;
  std::vector<char> buf(7000);  // smaller than a full record: both ways of opening
  while (!ec && out->size() < n) {
    auto reading =
        s->read_some(asio::buffer(buf.data(), std::min(buf.size(), n - out->size())), ec);
    const std::size_t got = co_await std::move(reading);
    out->append(buf.data(), got);
  }
  co_return ec;
}

// Rounds of a request from the client and a reply from the server, of sizes from one byte to
// several records, the client asking for `key_update` (SSL_KEY_UPDATE_*) before each request;
// then each side closes (close_notify, FIN) and the other reads to the end.
asio::awaitable<talk_result> talk(test::web_contexts* ctx, int key_update,
                                  SSL_SESSION* resume = nullptr,
                                  SSL_SESSION** session_out = nullptr) {
  talk_result r;
  auto opened = test::open_socket_session(ctx, resume);
  auto s = co_await std::move(opened);
  r.handshake_ec = s->client_ec ? s->client_ec : s->server_ec;
  if (r.handshake_ec) co_return r;
  r.server_own = s->server->own_records();
  r.client_own = s->client->own_records();
  r.server_ssl_after_handshake = s->server->native_handle() != nullptr;
  SSL* client = s->client->native_handle();
  r.resumed = SSL_session_reused(client) == 1;
  SSL_set_msg_callback(client, count_key_updates);
  SSL_set_msg_callback_arg(client, &r.key_updates_to_client);
  const std::size_t sizes[] = {1, 1300, 16384, 16385, 70000};
  for (std::size_t i = 0; i < std::size(sizes) && !r.ec; ++i) {
    if (key_update != no_key_update && SSL_key_update(client, key_update) != 1) {
      ADD_FAILURE() << "SSL_key_update failed";
      co_return r;
    }
    const std::string request = test::deterministic_bytes(sizes[i], i + 1);
    const std::string reply = test::deterministic_bytes(sizes[std::size(sizes) - 1 - i], i + 50);
    auto asking = s->client->write_all(asio::buffer(request), r.ec);
    co_await std::move(asking);
    std::string got_request, got_reply;
    if (!r.ec) {
      auto reading = read_exactly(s->server.get(), &got_request, request.size());
      r.ec = co_await std::move(reading);
    }
    if (!r.ec) {
      auto answering = s->server->write_all(asio::buffer(reply), r.ec);
      co_await std::move(answering);
    }
    if (!r.ec) {
      auto reading = read_exactly(s->client.get(), &got_reply, reply.size());
      r.ec = co_await std::move(reading);
    }
    if (!r.ec && (got_request != request || got_reply != reply)) {
      ADD_FAILURE() << "round " << i << ": the bytes changed on the way";
      co_return r;
    }
    if (!r.ec) ++r.rounds_done;
  }
  if (session_out) *session_out = SSL_get1_session(client);  // its tickets have arrived
  r.server_ssl_after_talk = s->server->native_handle() != nullptr;
  if (r.ec) co_return r;
  auto closing = test::send_and_close(s->client.get(), "client done");
  r.ec = co_await std::move(closing);
  auto to_end = test::read_to_end(s->server.get(), &r.server_end_ec);
  const std::string last_request = co_await std::move(to_end);
  auto server_closing = test::send_and_close(s->server.get(), "server done");
  if (!r.ec) r.ec = co_await std::move(server_closing);
  auto client_to_end = test::read_to_end(s->client.get(), &r.client_end_ec);
  const std::string last_reply = co_await std::move(client_to_end);
  if (last_request != "client done" || last_reply != "server done")
    ADD_FAILURE() << "the last bytes before close_notify changed";
  co_return r;
}

void expect_clean(const std::optional<talk_result>& r, const char* what) {
  ASSERT_TRUE(r) << what << ": timed out";
  ASSERT_FALSE(r->handshake_ec) << what << ": " << r->handshake_ec.message();
  EXPECT_FALSE(r->ec) << what << ": " << r->ec.message();
  EXPECT_EQ(r->rounds_done, 5) << what;
  EXPECT_EQ(r->server_end_ec, asio::error::eof) << what << ": " << r->server_end_ec.message();
  EXPECT_EQ(r->client_end_ec, asio::error::eof) << what << ": " << r->client_end_ec.message();
  EXPECT_FALSE(r->client_own) << what;  // the client is OpenSSL's, as a visitor's would be
  EXPECT_FALSE(r->server_own) << what;  // and so are the server's records
  EXPECT_TRUE(r->server_ssl_after_handshake) << what;
  EXPECT_TRUE(r->server_ssl_after_talk) << what;
}

TEST(WebRecords, EachTls13SuiteRunsOnOpenSslsRecords) {
  for (const char* suite :
       {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}) {
    asio::io_context ioc;
    test::web_contexts ctx;
    ASSERT_EQ(SSL_CTX_set_ciphersuites(ctx.client.native_handle(), suite), 1);
    const auto r = test::run_for_result(ioc, talk(&ctx, no_key_update));
    expect_clean(r, suite);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->key_updates_to_client, 0) << suite;
  }
}

TEST(WebRecords, AClientsKeyUpdateIsFollowedAndAnsweredWhenItAsks) {
  struct kind {
    int update;
    const char* name;
    int answers;  // KeyUpdates the client gets back over the five rounds
  };
  for (const kind k : {kind{SSL_KEY_UPDATE_REQUESTED, "update_requested", 5},
                       kind{SSL_KEY_UPDATE_NOT_REQUESTED, "update_not_requested", 0}}) {
    asio::io_context ioc;
    test::web_contexts ctx;
    const auto r = test::run_for_result(ioc, talk(&ctx, k.update));
    expect_clean(r, k.name);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->key_updates_to_client, k.answers) << k.name;
  }
}

TEST(WebRecords, PaddedRecordsOpenToTheirData) {
  asio::io_context ioc;
  test::web_contexts ctx;
  ASSERT_EQ(SSL_CTX_set_block_padding(ctx.client.native_handle(), 512), 1);
  const auto r = test::run_for_result(ioc, talk(&ctx, no_key_update));
  expect_clean(r, "padded");
}

TEST(WebRecords, AResumedSessionRunsOnOpenSslsRecords) {
  asio::io_context ioc;
  test::web_contexts ctx;
  SSL_SESSION* session = nullptr;
  const auto first = test::run_for_result(ioc, talk(&ctx, no_key_update, nullptr, &session));
  expect_clean(first, "first");
  ASSERT_NE(session, nullptr);
  ioc.restart();
  const auto again = test::run_for_result(ioc, talk(&ctx, no_key_update, session));
  SSL_SESSION_free(session);
  expect_clean(again, "resumed");
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->resumed);
}

TEST(WebRecords, ATls12ClientTalksToTheEnd) {
  asio::io_context ioc;
  test::web_contexts ctx;
  ASSERT_EQ(SSL_CTX_set_max_proto_version(ctx.client.native_handle(), TLS1_2_VERSION), 1);
  const auto r = test::run_for_result(ioc, talk(&ctx, no_key_update));
  expect_clean(r, "TLS 1.2");
}

struct forged_result {
  error_code handshake_ec, server_ec, client_ec;
  std::string client_got;
};

// A record the client did not seal (written raw on its socket) fails the server's read, which
// tells the client with a fatal alert.
asio::awaitable<forged_result> forged(test::web_contexts* ctx) {
  forged_result r;
  auto opened = test::open_socket_session(ctx);
  auto s = co_await std::move(opened);
  r.handshake_ec = s->client_ec ? s->client_ec : s->server_ec;
  if (r.handshake_ec) co_return r;
  const std::string record = "\x17\x03\x03" + std::string("\x00\x20", 2) + std::string(32, 'x');
  error_code ec;
  co_await asio::async_write(s->client_socket, asio::buffer(record),
                             asio::redirect_error(asio::use_awaitable, ec));
  char buf[64];
  auto reading = s->server->read_some(asio::buffer(buf), r.server_ec);
  co_await std::move(reading);
  auto to_end = test::read_to_end(s->client.get(), &r.client_ec);
  r.client_got = co_await std::move(to_end);
  co_return r;
}

TEST(WebRecords, AForgedRecordEndsTheSessionWithAnAlert) {
  asio::io_context ioc;
  test::web_contexts ctx;
  const auto r = test::run_for_result(ioc, forged(&ctx));
  ASSERT_TRUE(r);
  ASSERT_FALSE(r->handshake_ec) << r->handshake_ec.message();
  EXPECT_TRUE(r->server_ec);
  EXPECT_NE(r->server_ec, asio::error::eof) << r->server_ec.message();
  EXPECT_EQ(r->client_got, "");
  // OpenSSL reports the server's bad_record_mac alert: an error, not a clean end.
  EXPECT_TRUE(r->client_ec);
  EXPECT_NE(r->client_ec, asio::error::eof);
  EXPECT_NE(r->client_ec.message().find("bad record mac"), std::string::npos)
      << r->client_ec.message();
}

}  // namespace
}  // namespace burrow::e2ee::web_records
