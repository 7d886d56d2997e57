// The end-to-end session's own records (ALPN burrow-e2ee/2): who gets them, the server's tickets
// ahead of its first own record, reads smaller than a record, and OpenSSL's records refused once
// both sides chose their own.
#include <gtest/gtest.h>

#include <vector>

#include <boost/asio/experimental/awaitable_operators.hpp>

#include "e2ee/secure_stream.hpp"
#include "e2ee/session.hpp"
#include "harness/net.hpp"
#include "link/record_protection.hpp"
#include "link/stream.hpp"
#include "tls/contexts.hpp"

namespace burrow::e2ee {
namespace own_records_test {

namespace asio = boost::asio;
using boost::system::error_code;

// An agent from before burrow-e2ee/2: its server context selects /1 only.
int select_only_v1(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                   unsigned int inlen, void*) {
  static constexpr unsigned char v1[] =
      "\x0d"
      "burrow-e2ee/1";
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, outlen, v1, sizeof v1 - 1, in, inlen) !=
      OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

struct negotiated {
  error_code client_ec, server_ec, read_ec;
  bool client_own = false, server_own = false;
  // Whether each side still had OpenSSL's session after the exchange.
  bool client_ssl_after = false, server_ssl_after = false;
  std::string client_alpn, request, reply;
};

asio::awaitable<negotiated> exchange(test::link_pair* pair, test::agent_contexts* ctx) {
  negotiated r;
  auto open =
      test::open_session(pair, ctx->client.native_handle(), ctx->server.native_handle(), {});
  auto s = co_await std::move(open);
  r.client_ec = s.client_ec;
  r.server_ec = s.server_ec;
  if (r.client_ec || r.server_ec) co_return r;
  r.client_own = s.client->own_records();
  r.server_own = s.server->own_records();
  const unsigned char* p = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(s.client->native_handle(), &p, &len);
  r.client_alpn.assign(reinterpret_cast<const char*>(p), len);
  auto request = test::send_and_close(s.client.get(), "request");
  co_await std::move(request);
  error_code ec;
  auto read_request = test::read_to_end(s.server.get(), &ec);
  r.request = co_await std::move(read_request);
  auto reply = test::send_and_close(s.server.get(), "reply");
  co_await std::move(reply);
  auto read_reply = test::read_to_end(s.client.get(), &r.read_ec);
  r.reply = co_await std::move(read_reply);
  r.client_ssl_after = s.client->native_handle() != nullptr;
  r.server_ssl_after = s.server->native_handle() != nullptr;
  co_return r;
}

negotiated run_exchange(bool client_offers_own, bool server_knows_own) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  test::agent_contexts ctx(client_offers_own);
  if (!server_knows_own)
    SSL_CTX_set_alpn_select_cb(ctx.server.native_handle(), select_only_v1, nullptr);
  auto r = test::run_with_links(ioc, pair, exchange(&pair, &ctx));
  EXPECT_TRUE(r);
  return r.value_or(negotiated{});
}

void expect_exchanged(const negotiated& r) {
  EXPECT_FALSE(r.client_ec) << r.client_ec.message();
  EXPECT_FALSE(r.server_ec) << r.server_ec.message();
  EXPECT_EQ(r.request, "request");
  EXPECT_EQ(r.reply, "reply");
  EXPECT_EQ(r.read_ec, asio::error::eof) << r.read_ec.message();
}

TEST(E2eeOwnRecords, TwoNewEndsRunTheirOwnRecords) {
  auto r = run_exchange(true, true);
  expect_exchanged(r);
  EXPECT_EQ(r.client_alpn, "burrow-e2ee/2");
  EXPECT_TRUE(r.client_own);
  EXPECT_TRUE(r.server_own);
  // The server's tickets went out with its handshake, so its SSL goes with its first own record;
  // the client's goes once the server's first own record has come after any tickets.
  EXPECT_FALSE(r.server_ssl_after);
  EXPECT_FALSE(r.client_ssl_after);
}

// With a side from before /2, whichever it is, both run on OpenSSL's records.
void expect_openssls_records(bool client_offers_own, bool server_knows_own) {
  auto r = run_exchange(client_offers_own, server_knows_own);
  expect_exchanged(r);
  EXPECT_EQ(r.client_alpn, "burrow-e2ee/1");
  EXPECT_FALSE(r.client_own);
  EXPECT_FALSE(r.server_own);
  EXPECT_TRUE(r.client_ssl_after);
  EXPECT_TRUE(r.server_ssl_after);
}

TEST(E2eeOwnRecords, AnOlderClientGetsOpenSslsRecords) {
  expect_openssls_records(false, true);
}

TEST(E2eeOwnRecords, AnOlderAgentGetsOpenSslsRecords) {
  expect_openssls_records(true, false);
}

struct server_first_result {
  error_code handshake_ec, banner_ec, read_ec;
  std::string banner, request;
  std::size_t cached = 0;
  bool client_ssl_after_ticket = true;  // the client's SSL after the banner
  bool reused_next = false;
};

// The server speaks first right after a full handshake: its ticket (OpenSSL's record) and its
// banner (our own) reach the client together. The banner is read, and the ticket reaches the
// cache, so the next connection resumes.
asio::awaitable<server_first_result> server_first(test::link_pair* pair, test::agent_contexts* ctx,
                                                  session_cache* cache) {
  server_first_result r;
  const std::string key = "svc|" + test::test_agent().pin;
  auto open = test::open_session(pair, ctx->client.native_handle(), ctx->server.native_handle(),
                                 {.pin = {}, .cache = cache, .cache_key = key});
  auto s = co_await std::move(open);
  r.handshake_ec = s.client_ec ? s.client_ec : s.server_ec;
  if (r.handshake_ec) co_return r;
  error_code ec;
  auto banner = s.server->write_all(asio::buffer(std::string_view("SSH-2.0-banner\r\n")), ec);
  co_await std::move(banner);
  char buf[64];
  auto read = s.client->read_some(asio::buffer(buf), r.banner_ec);
  std::size_t n = co_await std::move(read);
  r.banner.assign(buf, n);
  r.cached = cache->size();
  r.client_ssl_after_ticket = s.client->native_handle() != nullptr;
  auto request = test::send_and_close(s.client.get(), "request");
  co_await std::move(request);
  auto read_request = test::read_to_end(s.server.get(), &r.read_ec);
  r.request = co_await std::move(read_request);
  auto close = s.server->shutdown_send(ec);
  co_await std::move(close);
  auto end = test::read_to_end(s.client.get(), &ec);
  co_await std::move(end);
  s.ends.near->finish();
  s.ends.far->finish();
  auto again = test::open_session(pair, ctx->client.native_handle(), ctx->server.native_handle(),
                                  {.pin = {}, .cache = cache, .cache_key = key});
  auto next = co_await std::move(again);
  r.reused_next = !next.client_ec && SSL_session_reused(next.client->native_handle()) == 1;
  next.client->abort(proto::stream_status::cancelled);
  next.server->abort(proto::stream_status::cancelled);
  co_return r;
}

TEST(E2eeOwnRecords, TheServersTicketPrecedesItsFirstOwnRecord) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  test::agent_contexts ctx;
  session_cache cache;
  auto r = test::run_with_links(ioc, pair, server_first(&pair, &ctx, &cache));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->handshake_ec) << r->handshake_ec.message();
  EXPECT_FALSE(r->banner_ec) << r->banner_ec.message();
  EXPECT_EQ(r->banner, "SSH-2.0-banner\r\n");
  EXPECT_EQ(r->cached, 1u) << "the ticket did not reach the cache";
  // The ticket was the last of OpenSSL's records: the client's SSL went with the banner, and
  // the next connection still resumes from the cache.
  EXPECT_FALSE(r->client_ssl_after_ticket);
  EXPECT_EQ(r->request, "request");
  EXPECT_EQ(r->read_ec, asio::error::eof) << r->read_ec.message();
  EXPECT_TRUE(r->reused_next);
}

struct small_reads_result {
  error_code handshake_ec, read_ec;
  std::string received;
};

// Reads of 7 bytes (or `read_size`) take a 40,000-byte message apart: records larger than the
// reader's buffer are opened aside and handed out in pieces.
asio::awaitable<small_reads_result> small_reads(test::link_pair* pair, test::agent_contexts* ctx,
                                                const std::string* payload,
                                                std::size_t read_size = 7) {
  using namespace asio::experimental::awaitable_operators;
  small_reads_result r;
  auto open =
      test::open_session(pair, ctx->client.native_handle(), ctx->server.native_handle(), {});
  auto s = co_await std::move(open);
  r.handshake_ec = s.client_ec ? s.client_ec : s.server_ec;
  if (r.handshake_ec) co_return r;
  // All of it is sent (within the stream's window) before the first read, so the records
  // arrive together, behind the server's ticket.
  auto send = test::send_and_close(s.server.get(), *payload);
  co_await std::move(send);
  std::vector<char> buf(read_size);
  for (;;) {
    auto read = s.client->read_some(asio::buffer(buf), r.read_ec);
    std::size_t n = co_await std::move(read);
    r.received.append(buf.data(), n);
    if (r.read_ec) co_return r;
  }
}

TEST(E2eeOwnRecords, ReadsSmallerThanARecordGetEveryByte) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  test::agent_contexts ctx;
  const std::string payload = test::deterministic_bytes(40000, 11);
  auto r = test::run_with_links(ioc, pair, small_reads(&pair, &ctx, &payload));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->handshake_ec) << r->handshake_ec.message();
  EXPECT_EQ(r->read_ec, asio::error::eof) << r->read_ec.message();
  EXPECT_TRUE(r->received == payload) << r->received.size() << " bytes";
}

// The server's first own record arrives with more behind it, and the reads are a record's size
// (as the splice's are): the first record still comes out first.
TEST(E2eeOwnRecords, TheFirstOwnRecordIsReadBeforeTheOnesWithIt) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  test::agent_contexts ctx;
  // A full record and a small one, as an echo of a little over 16 KiB sends them.
  const std::string payload = test::deterministic_bytes(16 * 1024 + 300, 12);
  auto r = test::run_with_links(ioc, pair, small_reads(&pair, &ctx, &payload, 16 * 1024));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->handshake_ec) << r->handshake_ec.message();
  EXPECT_EQ(r->read_ec, asio::error::eof) << r->read_ec.message();
  EXPECT_TRUE(r->received == payload) << r->received.size() << " bytes";
}

struct openssl_data_result {
  error_code handshake_ec, read_ec;
  bool own = false;
};

// Once both sides chose their own records, application data on OpenSSL's records is refused:
// only the server's tickets may come that way.
asio::awaitable<openssl_data_result> openssl_data(test::link_pair* pair,
                                                  test::agent_contexts* ctx) {
  openssl_data_result r;
  auto open =
      test::open_session(pair, ctx->client.native_handle(), ctx->server.native_handle(), {});
  auto s = co_await std::move(open);
  r.handshake_ec = s.client_ec ? s.client_ec : s.server_ec;
  if (r.handshake_ec) co_return r;
  r.own = s.client->own_records();
  std::size_t n = 0;
  SSL_write_ex(s.server->native_handle(), "sneaky", 6, &n);  // into the server's record buffer
  error_code ec;
  auto flush = s.server->write_all(asio::buffer(std::string_view("genuine")), ec);
  co_await std::move(flush);
  char buf[64];
  for (int i = 0; i < 3 && !r.read_ec; ++i) {
    auto read = s.client->read_some(asio::buffer(buf), r.read_ec);
    co_await std::move(read);
  }
  co_return r;
}

TEST(E2eeOwnRecords, DataOnOpenSslsRecordsIsRefused) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  test::agent_contexts ctx;
  auto r = test::run_with_links(ioc, pair, openssl_data(&pair, &ctx));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->handshake_ec) << r->handshake_ec.message();
  EXPECT_TRUE(r->own);
  EXPECT_EQ(r->read_ec, boost::system::errc::protocol_error) << r->read_ec.message();
}

// Writes `bytes` into the server's end of the stream, as someone on the path would, and reads
// once at the client: what that read ends with.
asio::awaitable<error_code> forge_then_read(test::tls_session* s, std::string bytes) {
  error_code ec;
  auto inject = s->ends.far->write_some(asio::buffer(bytes), ec);
  co_await std::move(inject);
  char buf[64];
  auto read = s->client->read_some(asio::buffer(buf), ec);
  co_await std::move(read);
  co_return ec;
}

struct forged_first_result {
  error_code handshake_ec, client_ec, server_ec;
};

// A forged record where the server's ticket or first own record belongs: neither our keys nor
// OpenSSL's open it, and both ends fail.
asio::awaitable<forged_first_result> forged_first(test::link_pair* pair,
                                                  test::agent_contexts* ctx) {
  forged_first_result r;
  auto open =
      test::open_session(pair, ctx->client.native_handle(), ctx->server.native_handle(), {});
  auto s = co_await std::move(open);
  r.handshake_ec = s.client_ec ? s.client_ec : s.server_ec;
  if (r.handshake_ec) co_return r;
  auto forged =
      forge_then_read(&s, "\x17\x03\x03" + std::string("\x00\x20", 2) + std::string(32, 'x'));
  r.client_ec = co_await std::move(forged);
  char buf[64];
  auto server_read = s.server->read_some(asio::buffer(buf), r.server_ec);
  co_await std::move(server_read);
  co_return r;
}

TEST(E2eeOwnRecords, AForgedRecordAmongTheTicketsFailsBothEnds) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  test::agent_contexts ctx;
  auto r = test::run_with_links(ioc, pair, forged_first(&pair, &ctx));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->handshake_ec) << r->handshake_ec.message();
  EXPECT_TRUE(r->client_ec);
  EXPECT_NE(r->client_ec, asio::error::eof);
  EXPECT_TRUE(r->server_ec);
  EXPECT_NE(r->server_ec, asio::error::eof);
}

// A header no record of ours or OpenSSL's has, where the server's first records belong: the
// read fails at once rather than waiting for a body that could be 16 KiB of anything.
asio::awaitable<error_code> bad_header_first(test::link_pair* pair, test::agent_contexts* ctx) {
  auto open =
      test::open_session(pair, ctx->client.native_handle(), ctx->server.native_handle(), {});
  auto s = co_await std::move(open);
  if (s.client_ec || s.server_ec) co_return s.client_ec ? s.client_ec : s.server_ec;
  // An alert in the clear, its body withheld.
  auto read = forge_then_read(&s, std::string("\x15\x03\x03\x00\x02", 5));
  co_return co_await std::move(read);
}

TEST(E2eeOwnRecords, ABadHeaderAmongTheTicketsFailsAtOnce) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  test::agent_contexts ctx;
  auto r = test::run_with_links(ioc, pair, bad_header_first(&pair, &ctx));
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, link::record_error::unexpected_message) << r->message();
}

}  // namespace own_records_test
}  // namespace burrow::e2ee
