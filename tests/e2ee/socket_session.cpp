// Socket sessions: both handshakes raced, so neither waits on the other.
#include "e2ee/socket_session.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "e2ee/session.hpp"
#include "tls/contexts.hpp"

namespace burrow::test {

namespace asio = boost::asio;
using asio::ip::tcp;

web_contexts::web_contexts()
    : server(tls::make_web_server_context(test_agent().pair)),
      client(asio::ssl::context::tls_client) {
  client.set_verify_mode(asio::ssl::verify_none);
}

asio::awaitable<std::unique_ptr<socket_session>> open_socket_session(web_contexts* ctx,
                                                                     SSL_SESSION* client_session) {
  using namespace asio::experimental::awaitable_operators;
  auto ex = co_await asio::this_coro::executor;
  auto s = std::make_unique<socket_session>(ex);
  tcp::acceptor acceptor(ex, {asio::ip::make_address("127.0.0.1"), 0});
  co_await (acceptor.async_accept(s->server_socket, asio::use_awaitable) &&
            s->client_socket.async_connect(acceptor.local_endpoint(), asio::use_awaitable));
  s->server = std::make_unique<e2ee::secure_stream>(ctx->server.native_handle(), s->server_socket,
                                                    e2ee::tls_role::server, "");
  s->client = std::make_unique<e2ee::secure_stream>(ctx->client.native_handle(), s->client_socket,
                                                    e2ee::tls_role::client, "");
  if (client_session) SSL_set_session(s->client->native_handle(), client_session);
  auto client_shake = s->client->handshake();
  auto server_shake = s->server->handshake();
  auto [c, v] = co_await (std::move(client_shake) && std::move(server_shake));
  s->client_ec = c;
  s->server_ec = v;
  co_return s;
}

}  // namespace burrow::test
