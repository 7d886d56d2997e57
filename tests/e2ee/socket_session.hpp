// Both ends of a TLS session over real loopback sockets, as an HTTPS visitor meets a web server
// (the relay's inspected share URL, or the agent's blind one): the server a secure_stream on a
// make_web_server_context context, the client a secure_stream on OpenSSL's own records, whatever
// its context allows.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <memory>
#include <optional>

#include "e2ee/secure_stream.hpp"

namespace burrow::test {

// A web server's context (as the relay's) and a client that does not check the certificate.
struct web_contexts {
  web_contexts();
  boost::asio::ssl::context server, client;
};

struct socket_session {
  boost::asio::ip::tcp::socket client_socket, server_socket;
  std::unique_ptr<e2ee::secure_stream> client, server;
  boost::system::error_code client_ec, server_ec;  // handshake results
  explicit socket_session(const boost::asio::any_io_executor& ex)
      : client_socket(ex), server_socket(ex) {}
};

// Connects two loopback sockets and runs both handshakes at once. `client_session`, when given,
// is offered for resumption.
boost::asio::awaitable<std::unique_ptr<socket_session>> open_socket_session(
    web_contexts* ctx, SSL_SESSION* client_session = nullptr);

// Runs `body` on `ioc` for at most 30 s; nothing when it did not finish.
template <class T>
std::optional<T> run_for_result(boost::asio::io_context& ioc, boost::asio::awaitable<T> body) {
  using namespace std::chrono_literals;
  auto result = boost::asio::co_spawn(ioc, std::move(body), boost::asio::use_future);
  ioc.run_for(30s);
  if (result.wait_for(0s) != std::future_status::ready) return std::nullopt;
  return result.get();
}

}  // namespace burrow::test
