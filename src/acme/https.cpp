// Beast over asio::ssl, one coroutine per exchange raced against a timer; failures are values.
#include "acme/https.hpp"

#include <openssl/ssl.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <stdexcept>

#include "core/deadline.hpp"
#include "tls/contexts.hpp"

namespace burrow::acme {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::uint32_t max_response_header = 16 * 1024;

https_response failure(std::string what) {
  https_response r;
  r.error = std::move(what);
  return r;
}

std::string header(const http::response<http::string_body>& m, http::field f) {
  auto it = m.find(f);
  return it == m.end() ? std::string() : std::string(it->value());
}

asio::awaitable<https_response> exchange(asio::ssl::context* tls, std::string ca_file,
                                         https_request request) {
  auto executor = co_await asio::this_coro::executor;
  const https_url& url = request.url;
  const std::string where = url.authority();
  tcp::resolver resolver(executor);
  auto [resolve_ec, endpoints] =
      co_await resolver.async_resolve(url.host, std::to_string(url.port), use_tuple);
  if (resolve_ec) co_return failure("cannot resolve " + url.host + ": " + resolve_ec.message());

  asio::ssl::stream<tcp::socket> stream(executor, *tls);
  tls::verification_outcome outcome;
  try {
    tls::apply_peer_verification(stream.native_handle(), {"", ca_file, url.host}, &outcome);
  } catch (const std::exception& e) {
    co_return failure(e.what());
  }
  auto [connect_ec, endpoint] =
      co_await asio::async_connect(stream.lowest_layer(), endpoints, use_tuple);
  if (connect_ec) co_return failure("cannot connect to " + where + ": " + connect_ec.message());
  auto [handshake_ec] = co_await stream.async_handshake(asio::ssl::stream_base::client, use_tuple);
  if (handshake_ec) {
    std::string detail = outcome.chain_error.empty() ? handshake_ec.message()
                                                     : "certificate: " + outcome.chain_error;
    co_return failure("TLS handshake with " + where + " failed: " + detail);
  }

  http::request<http::string_body> message;
  message.method_string(request.method);
  message.target(url.target);
  message.version(11);
  message.set(http::field::host, where);
  message.set(http::field::user_agent, "burrow/" BURROW_VERSION);
  message.keep_alive(false);
  if (!request.accept.empty()) message.set(http::field::accept, request.accept);
  if (request.method == "POST") {
    message.set(http::field::content_type, request.content_type);
    message.body() = std::move(request.body);
  }
  message.prepare_payload();
  auto [write_ec, written] = co_await http::async_write(stream, message, use_tuple);
  if (write_ec) co_return failure("cannot send to " + where + ": " + write_ec.message());

  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.header_limit(max_response_header);
  parser.body_limit(max_response_body);
  if (request.method == "HEAD") parser.skip(true);
  auto [read_ec, read] = co_await http::async_read(stream, buffer, parser, use_tuple);
  if (read_ec) co_return failure("cannot read the response of " + where + ": " + read_ec.message());
  // No TLS shutdown: the request said Connection: close and the response is complete.
  auto& m = parser.get();
  https_response r;
  r.status = m.result_int();
  r.content_type = header(m, http::field::content_type);
  r.location = header(m, http::field::location);
  r.replay_nonce = std::string(m["Replay-Nonce"]);
  r.retry_after = header(m, http::field::retry_after);
  r.body = std::move(m.body());
  co_return r;
}

}  // namespace

asio::ssl::context make_acme_client_context() {
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  SSL_CTX* native = ctx.native_handle();
  if (SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_default_verify_paths(native) != 1)
    tls::throw_openssl_error("cannot configure the ACME client context");
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_verify(native, SSL_VERIFY_PEER, nullptr);
  return ctx;
}

asio::awaitable<https_response> https_exchange(asio::ssl::context* tls, std::string ca_file,
                                               https_request request,
                                               std::chrono::milliseconds limit) {
  std::string where = request.url.authority();
  auto op = exchange(tls, std::move(ca_file), std::move(request));
  auto guarded = with_deadline(std::move(op), limit);
  auto response = co_await std::move(guarded);
  if (!response)
    co_return failure("no response from " + where + " within " + std::to_string(limit.count()) +
                      " ms");
  co_return std::move(*response);
}

}  // namespace burrow::acme
