// End-to-end session keys: a session stream's handshake gives both ends the same id and secret,
// streams keyed from it by the same number talk, and any other number, or a session made by
// another handshake, does not open a record.
#include <gtest/gtest.h>

#include <boost/asio/experimental/awaitable_operators.hpp>

#include "e2ee/secure_stream.hpp"
#include "e2ee/session.hpp"
#include "e2ee/session_keys.hpp"
#include "link/record_protection.hpp"
#include "link/stream.hpp"

namespace burrow::e2ee {
namespace session_keys_test {

namespace asio = boost::asio;
using boost::system::error_code;

struct made_session {
  error_code client_ec, server_ec;
  std::shared_ptr<const session_keys> client, server;
};

// A session stream's handshake: connect's context offers only the session's ALPN.
asio::awaitable<made_session> make_session(test::link_pair* pair, SSL_CTX* client_ctx,
                                           SSL_CTX* server_ctx) {
  using namespace asio::experimental::awaitable_operators;
  made_session r;
  auto open = pair->open(true);
  auto ends = co_await std::move(open);
  secure_stream client(client_ctx, ends.near, tls_role::client, alpn_session);
  secure_stream server(server_ctx, ends.far, tls_role::server, alpn_session);
  tls::verification_outcome outcome;
  tls::apply_peer_verification(client.native_handle(), {test::test_agent().pin, "", ""}, &outcome);
  auto [cec, sec] = co_await (client.handshake() && server.handshake());
  r.client_ec = cec;
  r.server_ec = sec;
  if (!cec && !sec) {
    r.client = session_keys::from_session(client.native_handle());
    r.server = session_keys::from_session(server.native_handle());
  }
  client.abort(proto::stream_status::cancelled);
  server.abort(proto::stream_status::cancelled);
  co_return r;
}

struct keyed_exchange {
  std::string request, reply;
  error_code request_ec, reply_ec;
};

// A stream keyed as stream `client_number` at connect and `server_number` at the agent.
asio::awaitable<keyed_exchange> exchange(test::link_pair* pair, const session_keys& client_keys,
                                         std::uint64_t client_number,
                                         const session_keys& server_keys,
                                         std::uint64_t server_number) {
  keyed_exchange r;
  auto open = pair->open(true);
  auto ends = co_await std::move(open);
  secure_stream client(ends.near, client_keys.stream(client_number, true));
  secure_stream server(ends.far, server_keys.stream(server_number, false));
  EXPECT_TRUE(client.own_records());
  EXPECT_EQ(client.native_handle(), nullptr);
  auto request = test::send_and_close(&client, "request");
  co_await std::move(request);
  auto read_request = test::read_to_end(&server, &r.request_ec);
  r.request = co_await std::move(read_request);
  if (r.request_ec == asio::error::eof) {
    auto reply = test::send_and_close(&server, "reply");
    co_await std::move(reply);
    auto read_reply = test::read_to_end(&client, &r.reply_ec);
    r.reply = co_await std::move(read_reply);
  }
  client.abort(proto::stream_status::cancelled);
  server.abort(proto::stream_status::cancelled);
  co_return r;
}

struct E2eeSessionStreams : testing::Test {
  asio::io_context ioc;
  test::link_pair pair{ioc};
  boost::asio::ssl::context client_ctx = make_client_context(true);
  boost::asio::ssl::context server_ctx = make_server_context(test::test_agent().pair);

  made_session session() {
    auto r = test::run_with_links(
        ioc, pair, make_session(&pair, client_ctx.native_handle(), server_ctx.native_handle()));
    EXPECT_TRUE(r);
    return r.value_or(made_session{});
  }
  keyed_exchange run(const session_keys& c, std::uint64_t cn, const session_keys& s,
                     std::uint64_t sn) {
    ioc.restart();
    test::link_pair fresh(ioc);
    auto r = test::run_with_links(ioc, fresh, exchange(&fresh, c, cn, s, sn));
    EXPECT_TRUE(r);
    return r.value_or(keyed_exchange{});
  }
};

TEST_F(E2eeSessionStreams, BothEndsHoldTheSameSessionAndItsStreamsTalk) {
  auto s = session();
  ASSERT_FALSE(s.client_ec) << s.client_ec.message();
  ASSERT_FALSE(s.server_ec) << s.server_ec.message();
  ASSERT_TRUE(s.client && s.server);
  EXPECT_EQ(s.client->id(), s.server->id());
  EXPECT_TRUE(valid_session_id(s.client->id())) << s.client->id();
  EXPECT_EQ(s.client->cipher(), s.server->cipher());
  for (std::uint64_t n : {1u, 2u, 1000u}) {
    auto r = run(*s.client, n, *s.server, n);
    EXPECT_EQ(r.request, "request");
    EXPECT_EQ(r.request_ec, asio::error::eof) << r.request_ec.message();
    EXPECT_EQ(r.reply, "reply");
    EXPECT_EQ(r.reply_ec, asio::error::eof) << r.reply_ec.message();
  }
}

TEST_F(E2eeSessionStreams, AnotherStreamNumberOrAnotherSessionOpensNothing) {
  auto s = session();
  ASSERT_TRUE(s.client && s.server);
  auto wrong_number = run(*s.client, 1, *s.server, 2);
  EXPECT_EQ(wrong_number.request, "");
  EXPECT_EQ(wrong_number.request_ec, link::record_error::authentication_failed)
      << wrong_number.request_ec.message();
  ioc.restart();
  test::link_pair again(ioc);
  auto second = test::run_with_links(
      ioc, again, make_session(&again, client_ctx.native_handle(), server_ctx.native_handle()));
  ASSERT_TRUE(second && second->server);
  EXPECT_NE(second->server->id(), s.client->id());
  auto other_session = run(*s.client, 1, *second->server, 1);
  EXPECT_EQ(other_session.request, "");
  EXPECT_EQ(other_session.request_ec, link::record_error::authentication_failed)
      << other_session.request_ec.message();
}

TEST_F(E2eeSessionStreams, AStreamClientCannotOpenASessionNorASessionClientAStream) {
  // The agent takes the session's ALPN only where it asked for a session, and a stream's ALPN
  // only on a stream.
  boost::asio::ssl::context stream_client = make_client_context();
  auto r = test::run_with_links(
      ioc, pair, make_session(&pair, stream_client.native_handle(), server_ctx.native_handle()));
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->client_ec || r->server_ec);
  EXPECT_FALSE(r->server);

  ioc.restart();
  test::link_pair second(ioc);
  auto on_stream = [&]() -> asio::awaitable<error_code> {
    using namespace asio::experimental::awaitable_operators;
    auto open = second.open(true);
    auto ends = co_await std::move(open);
    secure_stream client(client_ctx.native_handle(), ends.near, tls_role::client, alpn_session);
    secure_stream server(server_ctx.native_handle(), ends.far, tls_role::server);
    tls::verification_outcome outcome;
    tls::apply_peer_verification(client.native_handle(), {test::test_agent().pin, "", ""},
                                 &outcome);
    auto [cec, sec] = co_await (client.handshake() && server.handshake());
    client.abort(proto::stream_status::cancelled);
    server.abort(proto::stream_status::cancelled);
    co_return sec;
  };
  auto refused = test::run_with_links(ioc, second, on_stream());
  ASSERT_TRUE(refused);
  EXPECT_TRUE(*refused) << "the agent ran a stream's session under the session ALPN";
}

TEST(E2eeSessionKeys, SessionIdsAreThirtyTwoLowercaseHexDigits) {
  EXPECT_FALSE(valid_session_id(""));
  EXPECT_FALSE(valid_session_id(std::string(32, 'A')));
  EXPECT_FALSE(valid_session_id(std::string(31, 'a')));
  EXPECT_TRUE(valid_session_id(std::string(32, 'f')));
}

}  // namespace session_keys_test
}  // namespace burrow::e2ee
