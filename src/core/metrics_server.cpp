// The metrics listener: Beast reads the request head within the deadline, the answer closes.
#include "core/metrics_server.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include "core/spawn.hpp"

namespace burrow {

namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::ip::tcp;

namespace {

constexpr int max_connections = 32;

asio::awaitable<void> answer(tcp::socket socket, const metrics& m,
                             std::chrono::milliseconds deadline,
                             std::shared_ptr<std::atomic<int>> open) {
  // Here, not at namespace scope: in a unity build burrow::http is the proxy's namespace.
  namespace http = beast::http;
  struct done {
    std::shared_ptr<std::atomic<int>> n;
    ~done() { --*n; }
  } guard{open};
  beast::tcp_stream stream(std::move(socket));
  stream.expires_after(deadline);
  beast::flat_buffer buffer(8192);
  http::request_parser<http::empty_body> parser;
  parser.header_limit(8192);
  auto [ec, n] =
      co_await http::async_read(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
  if (ec) co_return;
  auto& req = parser.get();
  http::response<http::string_body> res;
  res.version(11);
  res.keep_alive(false);
  if (req.method() != http::verb::get) {
    res.result(http::status::method_not_allowed);
    res.set(http::field::allow, "GET");
  } else if (req.target() == "/metrics") {
    res.result(http::status::ok);
    res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    res.body() = m.render();
  } else if (req.target() == "/healthz") {
    res.result(http::status::ok);
    res.set(http::field::content_type, "text/plain");
    res.body() = "ok\n";
  } else {
    res.result(http::status::not_found);
    res.body() = "try /metrics\n";
  }
  res.prepare_payload();
  stream.expires_after(deadline);
  co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

}  // namespace

asio::awaitable<void> serve_metrics(tcp::acceptor& acceptor, const metrics& m,
                                    std::chrono::milliseconds deadline) {
  auto open = std::make_shared<std::atomic<int>>(0);
  asio::steady_timer pause(acceptor.get_executor());
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
    if (!acceptor.is_open() || ec == asio::error::operation_aborted) co_return;
    if (ec) {
      spdlog::warn("metrics listener: accept failed: {}; retrying in 100ms", ec.message());
      pause.expires_after(std::chrono::milliseconds(100));
      co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
      continue;
    }
    if (open->load() >= max_connections) continue;  // the socket closes here
    ++*open;
    auto ex = socket.get_executor();
    spawn_logged(ex, answer(std::move(socket), m, deadline, open), "metrics");
  }
}

}  // namespace burrow
