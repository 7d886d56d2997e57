// Session resumption: a second connection under the same service and pin skips the certificate
// and keeps its ticket; a disabled cache or another pin never resumes.
#include "e2ee/contexts.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>

#include "e2ee/session.hpp"
#include "link/stream.hpp"

namespace burrow::e2ee {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;

// Tickets that reached a client context whose cache is disabled (and stores none), counted by a
// callback of the test's own in place of the cache's.
std::atomic<std::uint64_t> uncached_tickets{0};

int count_ticket(SSL*, SSL_SESSION*) {
  ++uncached_tickets;
  return 0;  // OpenSSL keeps and drops its session
}

std::uint64_t tickets_seen(const session_cache& cache) {
  return cache.enabled() ? cache.tickets_stored() : uncached_tickets.load();
}

struct connection_result {
  error_code client_ec, server_ec;
  bool client_reused = false, server_reused = false;
  bool pin_mismatch = false;
  bool new_ticket = false;  // a ticket reached the cache after the handshake
  std::string peer;         // the agent's fingerprint as the client's SSL knows it
  std::string reply;
};

// One connection: handshake, a request and a reply (reading the reply also takes in the ticket),
// and a clean close both ways.
asio::awaitable<connection_result> connection(test::link_pair* pair, test::agent_contexts* ctx,
                                              session_cache* cache, std::string key,
                                              std::string pin) {
  connection_result r;
  auto open = test::open_session(pair, ctx->client.native_handle(), ctx->server.native_handle(),
                                 {.pin = pin, .cache = cache, .cache_key = key});
  auto s = co_await std::move(open);
  r.client_ec = s.client_ec;
  r.server_ec = s.server_ec;
  r.pin_mismatch = s.outcome->pin_mismatch;
  if (!r.client_ec && !r.server_ec) {
    r.client_reused = SSL_session_reused(s.client->native_handle()) == 1;
    r.server_reused = SSL_session_reused(s.server->native_handle()) == 1;
    r.peer = tls::peer_fingerprint(s.client->native_handle());
    const std::uint64_t tickets_before = tickets_seen(*cache);
    auto request = test::send_and_close(s.client.get(), "ping");
    co_await std::move(request);
    error_code ec;
    auto read_request = test::read_to_end(s.server.get(), &ec);
    co_await std::move(read_request);
    auto reply = test::send_and_close(s.server.get(), "pong");
    co_await std::move(reply);
    auto read_reply = test::read_to_end(s.client.get(), &ec);
    r.reply = co_await std::move(read_reply);
    r.new_ticket = tickets_seen(*cache) > tickets_before;
  } else {
    s.client->abort(proto::stream_status::cancelled);
  }
  s.ends.near->finish();
  s.ends.far->finish();
  co_return r;
}

struct connections {
  connection_result first, second, third;  // the third under the second's key and pin
};

// `later` serves the second and third connections: the same contexts, or those of an agent that
// restarted (a new ticket key) in between.
asio::awaitable<connections> in_turn(test::link_pair* pair, test::agent_contexts* ctx,
                                     test::agent_contexts* later, session_cache* cache,
                                     std::string second_key, std::string second_pin) {
  connections r;
  const auto& pin = test::test_agent().pin;
  auto first = connection(pair, ctx, cache, "svc|" + pin, pin);
  r.first = co_await std::move(first);
  auto second = connection(pair, later, cache, second_key, second_pin);
  r.second = co_await std::move(second);
  auto third = connection(pair, later, cache, second_key, second_pin);
  r.third = co_await std::move(third);
  co_return r;
}

connections run_three(session_cache* cache, std::string second_key, std::string second_pin,
                      bool restart_agent = false) {
  asio::io_context ioc;
  test::link_pair pair(ioc);
  test::agent_contexts ctx, restarted;
  if (!cache->enabled()) {
    SSL_CTX_sess_set_new_cb(ctx.client.native_handle(), count_ticket);
    SSL_CTX_sess_set_new_cb(restarted.client.native_handle(), count_ticket);
  }
  auto r = test::run_with_links(ioc, pair,
                                in_turn(&pair, &ctx, restart_agent ? &restarted : &ctx, cache,
                                        std::move(second_key), std::move(second_pin)));
  EXPECT_TRUE(r);
  return r.value_or(connections{});
}

// Resumed on both sides, and the request and reply went through.
void expect_resumed(const connection_result& c) {
  EXPECT_FALSE(c.client_ec) << c.client_ec.message();
  EXPECT_FALSE(c.server_ec) << c.server_ec.message();
  EXPECT_TRUE(c.client_reused);
  EXPECT_TRUE(c.server_reused);
  EXPECT_EQ(c.reply, "pong");
}

TEST(E2eeResumption, SecondConnectionResumes) {
  session_cache cache;
  const auto& pin = test::test_agent().pin;
  auto r = run_three(&cache, "svc|" + pin, pin);
  EXPECT_FALSE(r.first.client_ec);
  EXPECT_FALSE(r.first.client_reused);
  EXPECT_EQ(r.first.reply, "pong");
  expect_resumed(r.second);
  EXPECT_EQ(r.second.peer, pin);  // the resumed session still names the pinned certificate
  EXPECT_EQ(cache.size(), 1u);
}

// The full handshake brings a ticket; a resumption does not (contexts.cpp), and the ticket kept
// resumes the next connection too.
TEST(E2eeResumption, ResumptionKeepsItsTicket) {
  session_cache cache;
  const auto& pin = test::test_agent().pin;
  auto r = run_three(&cache, "svc|" + pin, pin);
  EXPECT_TRUE(r.first.new_ticket);
  expect_resumed(r.second);
  EXPECT_FALSE(r.second.new_ticket);
  expect_resumed(r.third);
  EXPECT_FALSE(r.third.new_ticket);
}

// A ticket the agent can no longer read (it restarted with a new ticket key) costs one full
// handshake, which brings a new ticket; the next connection resumes with that one.
TEST(E2eeResumption, AStaleTicketIsReplaced) {
  session_cache cache;
  const auto& pin = test::test_agent().pin;
  auto r = run_three(&cache, "svc|" + pin, pin, true);
  EXPECT_TRUE(r.first.new_ticket);
  EXPECT_FALSE(r.second.client_ec) << r.second.client_ec.message();
  EXPECT_FALSE(r.second.client_reused);
  EXPECT_TRUE(r.second.new_ticket);
  EXPECT_EQ(r.second.reply, "pong");
  expect_resumed(r.third);
  EXPECT_EQ(cache.size(), 1u);
}

TEST(E2eeResumption, DisabledCacheNeverResumes) {
  session_cache cache(false);
  const auto& pin = test::test_agent().pin;
  auto r = run_three(&cache, "svc|" + pin, pin);
  EXPECT_FALSE(r.second.client_ec) << r.second.client_ec.message();
  EXPECT_FALSE(r.second.client_reused);
  EXPECT_FALSE(r.second.server_reused);
  EXPECT_TRUE(r.second.new_ticket);  // a full handshake: the server still sends one
  EXPECT_EQ(r.second.reply, "pong");
  EXPECT_EQ(cache.tickets_stored(), 0u);  // and the disabled cache keeps none
  EXPECT_EQ(cache.size(), 0u);
}

TEST(E2eeResumption, AnotherPinDoesNotResumeAndIsChecked) {
  session_cache cache;
  const std::string other = "sha256:" + std::string(64, 'd');
  auto r = run_three(&cache, "svc|" + other, other);
  EXPECT_FALSE(r.first.client_ec);
  // A full handshake, so the certificate met the other pin and failed it.
  EXPECT_TRUE(r.second.client_ec);
  EXPECT_TRUE(r.second.pin_mismatch);
  EXPECT_FALSE(r.second.client_reused);
}

}  // namespace
}  // namespace burrow::e2ee
