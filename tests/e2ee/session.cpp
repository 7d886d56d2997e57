// Session helpers: each handshake is raced with its peer's, so neither waits on the other.
#include "e2ee/session.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <chrono>
#include <stdexcept>

namespace burrow::test {

namespace asio = boost::asio;
using boost::system::error_code;

const agent_identity& test_agent() {
  static const agent_identity agent = [] {
    auto pair = tls::make_self_signed("burrow agent", {}, std::chrono::hours(24));
    auto pin = tls::fingerprint_sha256(pair.cert_pem);
    return agent_identity{std::move(pair), std::move(pin)};
  }();
  return agent;
}

agent_contexts::agent_contexts(bool own_records) {
  if (own_records) return;
  static constexpr unsigned char only_v1[] =
      "\x0d"
      "burrow-e2ee/1";
  if (SSL_CTX_set_alpn_protos(client.native_handle(), only_v1, sizeof only_v1 - 1) != 0)
    throw std::runtime_error("cannot set the client's ALPN");
}

asio::awaitable<tls_session> open_session(link_pair* pair, SSL_CTX* client_ctx, SSL_CTX* server_ctx,
                                          session_options options) {
  using namespace asio::experimental::awaitable_operators;
  tls_session s;
  auto open = pair->open(options.sealed);
  s.ends = co_await std::move(open);
  s.client = std::make_unique<e2ee::secure_stream>(client_ctx, s.ends.near, e2ee::tls_role::client);
  s.server = std::make_unique<e2ee::secure_stream>(server_ctx, s.ends.far, e2ee::tls_role::server);
  s.outcome = std::make_unique<tls::verification_outcome>();
  std::string pin = options.pin.empty() ? test_agent().pin : options.pin;
  tls::apply_peer_verification(s.client->native_handle(), {pin, "", ""}, s.outcome.get());
  if (options.cache) options.cache->prepare(s.client->native_handle(), options.cache_key);
  auto client = s.client->handshake();
  auto server = s.server->handshake();
  auto [client_ec, server_ec] = co_await (std::move(client) && std::move(server));
  s.client_ec = client_ec;
  s.server_ec = server_ec;
  co_return s;
}

asio::awaitable<std::string> read_to_end(e2ee::secure_stream* s, error_code* ec) {
  std::string out;
  char buf[16 * 1024];
  for (;;) {
    auto read = s->read_some(asio::buffer(buf), *ec);
    std::size_t n = co_await std::move(read);
    out.append(buf, n);
    if (*ec) co_return out;
  }
}

asio::awaitable<error_code> send_and_close(e2ee::secure_stream* s, std::string data) {
  error_code ec;
  auto write = s->write_all(asio::buffer(data), ec);
  co_await std::move(write);
  if (ec) co_return ec;
  auto shut = s->shutdown_send(ec);
  co_await std::move(shut);
  co_return ec;
}

}  // namespace burrow::test
