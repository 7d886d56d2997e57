// secure_stream over a TCP socket (the relay's end of an inspected share URL): both ways with a
// half-close, a peer that closes TCP without close_notify, an abort, a handshake deadline, the
// buffers it keeps for small records, rest() giving them back between messages, none held while
// a handshake waits for its peer, and a stale wake-up. Both ends are secure_streams over real
// loopback sockets, but for the handshake's, whose client is OpenSSL driven by hand.
#include "e2ee/carrier.hpp"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>
#include <optional>
#include <string>

#include "core/deadline.hpp"
#include "e2ee/secure_stream.hpp"
#include "e2ee/session.hpp"
#include "e2ee/socket_session.hpp"
#include "harness/net.hpp"
#include "tls/contexts.hpp"

namespace burrow::e2ee::over_socket {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

using contexts = test::web_contexts;
using test::socket_session;

asio::awaitable<std::unique_ptr<socket_session>> open(contexts* ctx) {
  return test::open_socket_session(ctx);
}

// A session, its handshakes' first error (if any) in `handshake_ec`.
asio::awaitable<std::unique_ptr<socket_session>> open_checked(contexts* ctx,
                                                              error_code& handshake_ec) {
  auto opened = open(ctx);
  auto s = co_await std::move(opened);
  handshake_ec = s->client_ec ? s->client_ec : s->server_ec;
  co_return s;
}

template <class T>
std::optional<T> run(asio::io_context& ioc, asio::awaitable<T> body) {
  return test::run_for_result(ioc, std::move(body));
}

// Runs `body` on a new io_context with new contexts; nothing when it did not finish.
template <class Body>
auto run_with_contexts(Body body) {
  asio::io_context ioc;
  contexts ctx;
  return run(ioc, body(&ctx));
}

struct exchange_result {
  error_code handshake_ec, request_read_ec, reply_ec, reply_read_ec;
  std::string request, reply;
};

asio::awaitable<exchange_result> exchange(contexts* ctx, std::string request) {
  exchange_result r;
  auto s = co_await open_checked(ctx, r.handshake_ec);
  if (r.handshake_ec) co_return r;
  // The client sends everything and half-closes (close_notify, then FIN); the server reads to
  // the end and only then answers on the same connection.
  using namespace asio::experimental::awaitable_operators;
  auto sending = test::send_and_close(s->client.get(), std::move(request));
  auto reading = test::read_to_end(s->server.get(), &r.request_read_ec);
  auto [sent_ec, got] = co_await (std::move(sending) && std::move(reading));
  r.request = std::move(got);
  if (sent_ec) r.request_read_ec = sent_ec;
  auto replying = test::send_and_close(s->server.get(), "reply");
  r.reply_ec = co_await std::move(replying);
  auto read_reply = test::read_to_end(s->client.get(), &r.reply_read_ec);
  r.reply = co_await std::move(read_reply);
  co_return r;
}

TEST(SecureStreamOverASocket, CarriesBothWaysAndHalfCloses) {
  asio::io_context ioc;
  contexts ctx;
  // Large enough that reads grow from their first small size to whole records.
  std::string request = test::deterministic_bytes(3 << 20, 11);
  auto r = run(ioc, exchange(&ctx, request));
  ASSERT_TRUE(r);
  ASSERT_FALSE(r->handshake_ec) << r->handshake_ec.message();
  EXPECT_EQ(r->request_read_ec, asio::error::eof) << r->request_read_ec.message();
  EXPECT_EQ(r->request.size(), request.size());
  EXPECT_EQ(test::sha256_hex(r->request), test::sha256_hex(request));
  EXPECT_FALSE(r->reply_ec) << r->reply_ec.message();
  EXPECT_EQ(r->reply, "reply");
  EXPECT_EQ(r->reply_read_ec, asio::error::eof) << r->reply_read_ec.message();
}

struct truncation_result {
  error_code handshake_ec, read_ec;
  std::string received;
};

asio::awaitable<truncation_result> truncated(contexts* ctx) {
  truncation_result r;
  auto s = co_await open_checked(ctx, r.handshake_ec);
  if (r.handshake_ec) co_return r;
  error_code ec;
  auto writing = s->client->write_all(asio::buffer(std::string_view("cut")), ec);
  co_await std::move(writing);
  s->client_socket.shutdown(tcp::socket::shutdown_send, ec);  // a FIN, no close_notify
  auto reading = test::read_to_end(s->server.get(), &r.read_ec);
  r.received = co_await std::move(reading);
  co_return r;
}

TEST(SecureStreamOverASocket, AFinWithoutCloseNotifyIsTruncation) {
  auto r = run_with_contexts(truncated);
  ASSERT_TRUE(r);
  ASSERT_FALSE(r->handshake_ec) << r->handshake_ec.message();
  EXPECT_EQ(r->received, "cut");
  EXPECT_EQ(r->read_ec, asio::ssl::error::stream_truncated) << r->read_ec.message();
}

struct abort_result {
  error_code handshake_ec, read_ec, write_ec;
};

asio::awaitable<abort_result> aborted(contexts* ctx) {
  abort_result r;
  auto s = co_await open_checked(ctx, r.handshake_ec);
  if (r.handshake_ec) co_return r;
  s->server->abort(proto::stream_status::cancelled);  // an RST to the client
  auto reading = test::read_to_end(s->client.get(), &r.read_ec);
  co_await std::move(reading);
  auto writing = s->server->write_all(asio::buffer(std::string_view("late")), r.write_ec);
  co_await std::move(writing);
  co_return r;
}

TEST(SecureStreamOverASocket, AbortResetsTheConnection) {
  auto r = run_with_contexts(aborted);
  ASSERT_TRUE(r);
  ASSERT_FALSE(r->handshake_ec) << r->handshake_ec.message();
  EXPECT_EQ(r->read_ec, asio::error::connection_reset) << r->read_ec.message();
  EXPECT_TRUE(r->write_ec);  // nothing goes out after an abort
}

struct small_result {
  error_code handshake_ec, ec;
  int answered = 0;
  std::size_t server_buffers = 0;
};

asio::awaitable<small_result> small_records(contexts* ctx) {
  small_result r;
  auto s = co_await open_checked(ctx, r.handshake_ec);
  if (r.handshake_ec) co_return r;
  std::string request(200, 'q'), reply(1300, 'r');
  for (int i = 0; i < 50 && !r.ec; ++i) {
    auto asking = s->client->write_all(asio::buffer(request), r.ec);
    co_await std::move(asking);
    std::string got;
    while (!r.ec && got.size() < request.size()) {
      char buf[4096];
      auto reading = s->server->read_some(asio::buffer(buf), r.ec);
      got.append(buf, co_await std::move(reading));
    }
    auto answering = s->server->write_all(asio::buffer(reply), r.ec);
    co_await std::move(answering);
    std::string back;
    while (!r.ec && back.size() < reply.size()) {
      char buf[4096];
      auto reading = s->client->read_some(asio::buffer(buf), r.ec);
      back.append(buf, co_await std::move(reading));
    }
    if (!r.ec && got == request && back == reply) ++r.answered;
  }
  r.server_buffers = s->server->buffer_capacity();
  co_return r;
}

TEST(SecureStreamOverASocket, SmallRecordsKeepSmallBuffers) {
  auto r = run_with_contexts(small_records);
  ASSERT_TRUE(r);
  ASSERT_FALSE(r->handshake_ec) << r->handshake_ec.message();
  EXPECT_FALSE(r->ec) << r->ec.message();
  EXPECT_EQ(r->answered, 50);
  // Reads of 4 KiB and the records' own bytes (12 KiB in all here); asio's TLS stream holds
  // 68 KiB per connection.
  EXPECT_LE(r->server_buffers, 16u * 1024);
}

// Reads exactly `n` bytes; what came, short on an error.
asio::awaitable<std::string> read_exactly(secure_stream* s, std::size_t n, error_code& ec) {
  std::string got;
  while (!ec && got.size() < n) {
    char buf[16 * 1024];
    auto reading = s->read_some(asio::buffer(buf, std::min(sizeof buf, n - got.size())), ec);
    got.append(buf, co_await std::move(reading));
  }
  co_return got;
}

struct rest_result {
  error_code handshake_ec, ec, big_ec;
  std::size_t after_exchange = 0, after_rest = 0, after_big = 0, after_big_rest = 0;
  bool big_write_was_blocked = false, big_reply_intact = false, waiting_read_intact = false;
};

std::string patterned(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 4099) % 26);
  return s;
}

// What the coroutines spawned beside the test's own share with it: theirs for as long as they
// run, even if the test's coroutine gives up first.
struct in_flight {
  std::shared_ptr<socket_session> s;
  std::string big;
  error_code big_ec, waited_ec;
  bool big_done = false, read_done = false;
  std::string waited;
};

// Waits up to a second for `done`.
asio::awaitable<void> until(const bool& done) {
  asio::steady_timer pause(co_await asio::this_coro::executor);
  for (int i = 0; i < 100 && !done; ++i) {
    pause.expires_after(10ms);
    co_await pause.async_wait(asio::use_awaitable);
  }
}

// rest() between messages, and while a write is blocked on a full socket and a read waits.
asio::awaitable<rest_result> rest_between_messages(contexts* ctx) {
  rest_result r;
  auto ex = co_await asio::this_coro::executor;
  auto f = std::make_shared<in_flight>();
  f->s = co_await open_checked(ctx, r.handshake_ec);
  auto* client = f->s->client.get();
  auto* server = f->s->server.get();
  if (r.handshake_ec) co_return r;
  const std::string request(200, 'q'), reply(1300, 'r');
  auto asking = client->write_all(asio::buffer(request), r.ec);
  co_await std::move(asking);
  auto got = co_await read_exactly(server, request.size(), r.ec);
  auto answering = server->write_all(asio::buffer(reply), r.ec);
  co_await std::move(answering);
  auto back = co_await read_exactly(client, reply.size(), r.ec);
  if (r.ec || got != request || back != reply) co_return r;
  r.after_exchange = server->buffer_capacity();
  server->rest();
  r.after_rest = server->buffer_capacity();

  // 32 MiB that the client does not read yet: the server's write waits on a full socket, in the
  // middle of its flush, when rest() comes; then the client reads it all.
  f->big = patterned(32u << 20);
  asio::co_spawn(
      ex,
      [f]() -> asio::awaitable<void> {
        auto writing = f->s->server->write_all(asio::buffer(f->big), f->big_ec);
        co_await std::move(writing);
        f->big_done = true;
      },
      asio::detached);
  asio::steady_timer pause(ex, 100ms);
  co_await pause.async_wait(asio::use_awaitable);
  r.big_write_was_blocked = !f->big_done;
  server->rest();
  auto big_back = co_await read_exactly(client, f->big.size(), r.ec);
  r.big_reply_intact = big_back == f->big;
  co_await until(f->big_done);
  if (!f->big_done || f->big_ec) {
    server->abort(proto::stream_status::cancelled);  // the writer ends now
    co_return r;
  }
  r.after_big = server->buffer_capacity();
  server->rest();
  r.after_big_rest = server->buffer_capacity();

  // A read that waits for the next request when rest() comes still gets all of it.
  asio::co_spawn(
      ex,
      [f, n = request.size()]() -> asio::awaitable<void> {
        f->waited = co_await read_exactly(f->s->server.get(), n, f->waited_ec);
        f->read_done = true;
      },
      asio::detached);
  pause.expires_after(20ms);
  co_await pause.async_wait(asio::use_awaitable);
  server->rest();
  auto again = client->write_all(asio::buffer(request), r.ec);
  co_await std::move(again);
  co_await until(f->read_done);
  r.waiting_read_intact = f->read_done && !f->waited_ec && f->waited == request;
  if (!f->read_done) server->abort(proto::stream_status::cancelled);
  co_return r;
}

TEST(SecureStreamOverASocket, RestGivesItsBuffersBackBetweenMessagesAndLosesNothingInFlight) {
  auto r = run_with_contexts(rest_between_messages);
  ASSERT_TRUE(r);
  ASSERT_FALSE(r->handshake_ec) << r->handshake_ec.message();
  EXPECT_FALSE(r->ec) << r->ec.message();
  EXPECT_GT(r->after_exchange, 0u);  // the exchange's buffers, until rest()
  EXPECT_EQ(r->after_rest, 0u);
  EXPECT_TRUE(r->big_write_was_blocked);
  EXPECT_FALSE(r->big_ec) << r->big_ec.message();
  EXPECT_TRUE(r->big_reply_intact);
  EXPECT_GT(r->after_big, 16u * 1024);  // a large write's buffers, until rest()
  EXPECT_EQ(r->after_big_rest, 0u);
  EXPECT_TRUE(r->waiting_read_intact);
}

struct stale_result {
  error_code handshake_ec, ec, stale_ec, next_ec;
  std::size_t stale_read = 1, held_after_stale = 1;
  std::string next;
};

// The test's sockets have no TCP_INQ, so a read that took everything does not prove the socket
// empty: the next wait_readable returns at once, as after a stale edge.
asio::awaitable<stale_result> stale_wake_up(contexts* ctx) {
  stale_result r;
  auto s = co_await open_checked(ctx, r.handshake_ec);
  if (r.handshake_ec) co_return r;
  const std::string request(300, 'q');
  auto asking = s->client->write_all(asio::buffer(request), r.ec);
  co_await std::move(asking);
  auto got = co_await read_exactly(s->server.get(), request.size(), r.ec);
  if (r.ec || got != request) co_return r;
  s->server->rest();
  auto waking = s->server->wait_readable();
  co_await std::move(waking);
  char buf[4096];
  auto stale = s->server->read_some(asio::buffer(buf), r.stale_ec);
  r.stale_read = co_await std::move(stale);
  r.held_after_stale = s->server->buffer_capacity();
  // The next wait is a real one; the request after it reads as usual.
  auto asking_again = s->client->write_all(asio::buffer(request), r.ec);
  co_await std::move(asking_again);
  auto waiting = s->server->wait_readable();
  co_await std::move(waiting);
  r.next = co_await read_exactly(s->server.get(), request.size(), r.next_ec);
  co_return r;
}

TEST(SecureStreamOverASocket, AStaleWakeUpEndsTheReadWithWouldBlockAndHoldsNothing) {
  auto r = run_with_contexts(stale_wake_up);
  ASSERT_TRUE(r);
  ASSERT_FALSE(r->handshake_ec) << r->handshake_ec.message();
  ASSERT_FALSE(r->ec) << r->ec.message();
  EXPECT_EQ(r->stale_ec, asio::error::would_block) << r->stale_ec.message();
  EXPECT_EQ(r->stale_read, 0u);
  EXPECT_EQ(r->held_after_stale, 0u);
  EXPECT_FALSE(r->next_ec) << r->next_ec.message();
  EXPECT_EQ(r->next, std::string(300, 'q'));
}

struct waiting_result {
  error_code server_ec;
  bool client_done = false, server_waited = false;
  std::size_t while_waiting = std::numeric_limits<std::size_t>::max();
};

// Sends all of `bytes` on `s`.
asio::awaitable<error_code> send_raw(tcp::socket& s, const std::string& bytes) {
  auto [ec, n] =
      co_await asio::async_write(s, asio::buffer(bytes), asio::as_tuple(asio::use_awaitable));
  co_return ec;
}

// What an OpenSSL client on memory BIOs has written, taken out.
std::string take_written(BIO* out) {
  std::string bytes;
  char buf[4096];
  int n;
  while ((n = BIO_read(out, buf, sizeof buf)) > 0) bytes.append(buf, static_cast<std::size_t>(n));
  return bytes;
}

// The server's side, shared with its handshake's coroutine for as long as that runs.
struct server_side {
  explicit server_side(const asio::any_io_executor& ex) : socket(ex) {}
  tcp::socket socket;
  std::unique_ptr<secure_stream> tls;
  std::optional<error_code> done;
};

// A server handshake waiting for the client's Finished, the client driven by hand so the test
// can look at the server in between.
asio::awaitable<waiting_result> server_waits_for_finished(contexts* ctx) {
  using namespace asio::experimental::awaitable_operators;
  waiting_result r;
  auto ex = co_await asio::this_coro::executor;
  auto side = std::make_shared<server_side>(ex);
  tcp::socket client(ex);
  tcp::acceptor acceptor(ex, {asio::ip::make_address("127.0.0.1"), 0});
  co_await (acceptor.async_accept(side->socket, asio::use_awaitable) &&
            client.async_connect(acceptor.local_endpoint(), asio::use_awaitable));
  side->tls = std::make_unique<secure_stream>(ctx->server.native_handle(), side->socket,
                                              tls_role::server, "");
  auto* tls = side->tls.get();
  asio::co_spawn(
      ex,
      [side]() -> asio::awaitable<void> {
        auto shaking = side->tls->handshake();
        side->done = co_await std::move(shaking);
      },
      asio::detached);
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx->client.native_handle()), SSL_free);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl.get(), in, out);
  SSL_set_connect_state(ssl.get());
  SSL_do_handshake(ssl.get());
  if (co_await send_raw(client, take_written(out))) co_return r;
  // The server's whole flight, until the client's handshake is done (its Finished written).
  asio::steady_timer pause(ex);
  for (int i = 0; i < 200 && !r.client_done; ++i) {
    char buf[4096];
    auto [ec, n] =
        co_await client.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
    if (ec) break;
    BIO_write(in, buf, static_cast<int>(n));
    r.client_done = SSL_do_handshake(ssl.get()) == 1;
  }
  if (!r.client_done) {
    tls->abort(proto::stream_status::cancelled);
    co_return r;
  }
  pause.expires_after(20ms);
  co_await pause.async_wait(asio::use_awaitable);
  r.server_waited = !side->done.has_value();
  r.while_waiting = tls->buffer_capacity();
  // The client's Finished: the server's handshake ends well, taking buffers again as it goes.
  if (co_await send_raw(client, take_written(out))) co_return r;
  for (int i = 0; i < 100 && !side->done.has_value(); ++i) {
    pause.expires_after(10ms);
    co_await pause.async_wait(asio::use_awaitable);
  }
  if (side->done.has_value())
    r.server_ec = *side->done;
  else
    tls->abort(proto::stream_status::cancelled);
  co_return r;
}

TEST(SecureStreamOverASocket, AHandshakeWaitingForItsPeerHoldsNoBufferOfItsOwn) {
  auto r = run_with_contexts(server_waits_for_finished);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->client_done);
  EXPECT_TRUE(r->server_waited);
  EXPECT_EQ(r->while_waiting, 0u);
  EXPECT_FALSE(r->server_ec) << r->server_ec.message();
}

struct silent_result {
  bool timed_out = false;
  std::chrono::milliseconds took{0};
};

// A visitor that connects and sends nothing: the handshake's deadline ends it, its wait on the
// socket cancelled.
asio::awaitable<silent_result> silent_client(contexts* ctx) {
  using namespace asio::experimental::awaitable_operators;
  auto ex = co_await asio::this_coro::executor;
  tcp::socket client(ex), server(ex);
  tcp::acceptor acceptor(ex, {asio::ip::make_address("127.0.0.1"), 0});
  co_await (acceptor.async_accept(server, asio::use_awaitable) &&
            client.async_connect(acceptor.local_endpoint(), asio::use_awaitable));
  silent_result r;
  auto start = std::chrono::steady_clock::now();
  {
    secure_stream tls(ctx->server.native_handle(), server, tls_role::server, "");
    auto shaking = tls.handshake();
    auto shaken = co_await with_deadline(std::move(shaking), 200ms);
    r.timed_out = !shaken;
  }
  r.took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start);
  co_return r;
}

TEST(SecureStreamOverASocket, AHandshakeDeadlineEndsASilentVisitor) {
  auto r = run_with_contexts(silent_client);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(r->took, 5s);
}

}  // namespace
}  // namespace burrow::e2ee::over_socket
