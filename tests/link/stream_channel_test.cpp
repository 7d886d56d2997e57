// TLS inside a stream: two links over a real loopback TLS connection, then an end-to-end TLS
// session through one stream of them, pinned to the far end's own certificate.
#include "link/stream_channel.hpp"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>

#include "harness/net.hpp"
#include "link/link.hpp"
#include "tls/certs.hpp"
#include "tls/contexts.hpp"

namespace burrow::link {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;

struct identities {
  tls::key_pair ca = tls::make_ca("test ca", 24h);
  tls::key_pair relay = tls::make_leaf(ca, "relay", {"localhost"}, {"127.0.0.1"}, 24h);
  tls::key_pair agent = tls::make_self_signed("agent", {"agent"}, 24h);
};

struct outcome {
  std::string echoed;
  bool inner_pin_mismatch = false;
  bool clean_end = false;
  std::string error;
};

// The far end: accepts every stream and runs an echo over TLS inside it.
asio::awaitable<void> inner_echo(std::shared_ptr<link> l, std::shared_ptr<stream> s,
                                 asio::ssl::context* ctx, std::size_t size) {
  l->accept(*s);
  asio::ssl::stream<stream_channel> tls(stream_channel(s, l->executor()), *ctx);
  auto [hs] = co_await tls.async_handshake(asio::ssl::stream_base::server,
                                           asio::as_tuple(asio::use_awaitable));
  if (!hs) {
    std::string data(size, '\0');
    auto [ec, n] =
        co_await asio::async_read(tls, asio::buffer(data), asio::as_tuple(asio::use_awaitable));
    if (!ec)
      co_await asio::async_write(tls, asio::buffer(data), asio::as_tuple(asio::use_awaitable));
    // Wait for the near end's half-close: a reset now would discard the echo in flight.
    char rest[16];
    co_await tls.async_read_some(asio::buffer(rest), asio::as_tuple(asio::use_awaitable));
  }
  s->shutdown_send();
  s->finish();
}

asio::awaitable<void> far_end(tcp::acceptor& acceptor, asio::ssl::context& link_ctx,
                              asio::ssl::context& inner_ctx, std::size_t size) {
  auto socket = co_await acceptor.async_accept(asio::use_awaitable);
  tls_stream tls(std::move(socket), link_ctx);
  co_await tls.async_handshake(asio::ssl::stream_base::server, asio::use_awaitable);
  auto l = std::make_shared<link>(std::move(tls), link_role::acceptor, link_limits{}, "far");
  link* raw = l.get();
  link::handlers h;
  h.on_open = [raw, &inner_ctx, size](std::shared_ptr<stream> s, proto::open_metadata) {
    asio::co_spawn(raw->executor(),
                   inner_echo(raw->shared_from_this(), std::move(s), &inner_ctx, size),
                   asio::detached);
  };
  co_await l->run(std::move(h));
}

asio::awaitable<outcome> near_end(std::uint16_t port, std::string relay_pin, std::string inner_pin,
                                  std::string payload) {
  outcome out;
  auto ex = co_await asio::this_coro::executor;
  tcp::socket socket(ex);
  co_await socket.async_connect({asio::ip::make_address("127.0.0.1"), port}, asio::use_awaitable);
  auto link_ctx = tls::make_client_context({});
  tls_stream tls(std::move(socket), link_ctx);
  tls::verification_outcome link_check;
  tls::apply_peer_verification(tls.native_handle(), {relay_pin, "", "127.0.0.1"}, &link_check);
  co_await tls.async_handshake(asio::ssl::stream_base::client, asio::use_awaitable);
  auto l = std::make_shared<link>(std::move(tls), link_role::dialer, link_limits{}, "near");
  asio::co_spawn(ex, l->run({}), asio::detached);

  auto s = l->open_stream({"svc", "127.0.0.1", 1, "127.0.0.1", 2});
  auto inner_ctx = tls::make_client_context({});
  asio::ssl::stream<stream_channel> inner(stream_channel(s, ex), inner_ctx);
  tls::verification_outcome inner_check;
  tls::apply_peer_verification(inner.native_handle(), {inner_pin, "", "agent"}, &inner_check);
  auto [hs] = co_await inner.async_handshake(asio::ssl::stream_base::client,
                                             asio::as_tuple(asio::use_awaitable));
  if (hs) {
    out.inner_pin_mismatch = inner_check.pin_mismatch;
    out.error = hs.message();
  } else {
    co_await asio::async_write(inner, asio::buffer(payload), asio::use_awaitable);
    out.echoed.resize(payload.size());
    auto [ec, n] = co_await asio::async_read(inner, asio::buffer(out.echoed),
                                             asio::as_tuple(asio::use_awaitable));
    if (ec) out.error = ec.message();
    // Half-close, then wait for the far end's: both sides finish cleanly, with no reset.
    s->shutdown_send();
    char rest[16];
    auto [eof, m] =
        co_await inner.async_read_some(asio::buffer(rest), asio::as_tuple(asio::use_awaitable));
    out.clean_end = eof == asio::ssl::error::stream_truncated || eof == asio::error::eof;
  }
  s->finish();
  l->close("test done");
  co_return out;
}

outcome run_pair(const identities& id, std::string inner_pin, std::string payload) {
  asio::io_context ioc;
  tcp::acceptor acceptor(ioc, {asio::ip::make_address("127.0.0.1"), 0});
  auto link_server = tls::make_server_context(id.relay, {});
  auto inner_server = tls::make_server_context(id.agent, {});
  asio::co_spawn(ioc, far_end(acceptor, link_server, inner_server, payload.size()), asio::detached);
  auto result = asio::co_spawn(
      ioc,
      near_end(acceptor.local_endpoint().port(), tls::fingerprint_sha256(id.relay.cert_pem),
               std::move(inner_pin), std::move(payload)),
      asio::use_future);
  ioc.run_for(30s);
  EXPECT_EQ(result.wait_for(0s), std::future_status::ready);
  return result.wait_for(0s) == std::future_status::ready ? result.get() : outcome{};
}

TEST(StreamChannel, TlsInsideAStreamCarriesDataBothWays) {
  identities id;
  std::string payload = test::deterministic_bytes(3u << 20, 17);  // beyond one window
  auto out = run_pair(id, tls::fingerprint_sha256(id.agent.cert_pem), payload);
  EXPECT_EQ(out.error, "");
  ASSERT_EQ(out.echoed.size(), payload.size());
  EXPECT_TRUE(out.echoed == payload);
  EXPECT_TRUE(out.clean_end);
}

TEST(StreamChannel, WrongInnerPinFailsTheInnerHandshake) {
  identities id;
  auto out = run_pair(id, "sha256:" + std::string(64, 'c'), "never sent");
  EXPECT_TRUE(out.inner_pin_mismatch);
  EXPECT_TRUE(out.echoed.empty());
}

}  // namespace
}  // namespace burrow::link
