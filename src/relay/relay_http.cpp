// Plain HTTP on the relay: each connection's first request head names the share URL by its Host.
// Visitors are redirected to HTTPS, unless the service asked for plain HTTP (then the request,
// in the clear, goes on to its agent in a stream marked scheme "http").
#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "core/acceptor.hpp"
#include "core/deadline.hpp"
#include "core/spawn.hpp"
#include "http/forward_head.hpp"
#include "kinds/registry.hpp"
#include "link/stream.hpp"
#include "proto/client_hello.hpp"
#include "relay/relay.hpp"
#include "relay/visitor_info.hpp"

namespace burrow::relay {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// The first request head is what routes; it must arrive whole within this many bytes.
constexpr std::size_t max_routing_head = 16 * 1024;

// Reads until the end of the first request head; everything read (the head and whatever came
// with it) is left in `bytes`.
asio::awaitable<boost::system::error_code> read_first_head(tcp::socket& socket,
                                                           std::string& bytes) {
  char buf[4096];
  while (bytes.find("\r\n\r\n") == std::string::npos) {
    if (bytes.size() >= max_routing_head) co_return boost::beast::http::error::header_limit;
    auto [ec, n] =
        co_await socket.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
    if (ec) co_return ec;
    bytes.append(buf, n);
  }
  co_return boost::system::error_code{};
}

asio::awaitable<void> answer_plain(tcp::socket& socket, std::string response) {
  co_await asio::async_write(socket, asio::buffer(response), asio::as_tuple(asio::use_awaitable));
  boost::system::error_code ec;
  socket.shutdown(tcp::socket::shutdown_send, ec);
  // Let the visitor read the answer before the close: unread input would turn it into a reset.
  char buf[4096];
  for (;;) {
    auto [rec, n] =
        co_await socket.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
    if (rec) break;
  }
}

}  // namespace

asio::awaitable<void> relay::http_session(tcp::socket socket, admitted conn) {
  std::string bytes;
  auto reading = read_first_head(socket, bytes);
  auto got = co_await with_deadline(std::move(reading), handshake_timeout());
  if (!got || (*got && *got != boost::beast::http::error::header_limit)) {
    rejected(listener::http, got ? "closed_early" : "request_head_timeout", peer_text(conn.peer),
             got ? "closed before a whole request head" : "no whole request head in time");
    co_return;
  }
  auto head = *got ? std::nullopt : http::parse_request_head(bytes);
  std::string response;
  std::string name;
  std::string host;
  if (!head) {
    rejected(listener::http, "bad_request", peer_text(conn.peer), "not an HTTP/1.1 request");
    response = http::page_response(400, "not an HTTP/1.1 request this relay can route");
  } else {
    std::string_view host_header = (*head)[boost::beast::http::field::host];
    auto colon = host_header.rfind(':');
    if (colon != std::string_view::npos && host_header.find(']') == std::string_view::npos)
      host_header = host_header.substr(0, colon);
    auto canonical = proto::canonical_host_name(host_header);
    host = canonical.value_or("");
    const std::string suffix = "." + config_.domain;
    if (host.size() > suffix.size() && host.ends_with(suffix))
      name = host.substr(0, host.size() - suffix.size());
    if (name.empty() || name.find('.') != std::string::npos)
      response = http::page_response(404, host.empty() ? "no tunnel name: the request has no Host"
                                                       : "no tunnel named " + host);
  }
  std::shared_ptr<link::link> target;
  if (response.empty()) {
    auto route = names_.pick(name, "", socket.get_executor());
    // This door redirects or forwards in the clear; whatever else a kind says means not here.
    auto action = kinds::action_at(door::http, route);
    if (action != door_action::redirect && action != door_action::forward_http) {
      response = http::page_response(404, "no tunnel named " + name);
    } else if (!route.link) {
      bool offline = route.status == proto::stream_status::unreachable;
      response = http::page_response(offline ? 502 : 404, offline ? "tunnel " + name + " is offline"
                                                                  : "no tunnel named " + name);
    } else if (action == door_action::redirect) {
      if (https_port_ == 0) {
        response = http::page_response(404, "this relay serves no HTTPS share URLs");
      } else {
        std::string location = "https://" + host +
                               (https_port_ == 443 ? "" : ":" + std::to_string(https_port_)) +
                               std::string(head->target());
        response = "HTTP/1.1 308 Permanent Redirect\r\nLocation: " + location +
                   "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      }
    } else {
      target = std::move(route.link);
    }
  }
  if (!target) {
    auto answering = answer_plain(socket, std::move(response));
    co_await with_deadline(std::move(answering), handshake_timeout());
    co_return;
  }
  move_socket(std::move(socket), target->executor(),
              [this, target, name, conn, bytes = std::move(bytes)](tcp::socket moved) mutable {
                spawn_logged(
                    target->executor(),
                    http_visitor(target, std::move(moved), name, std::move(bytes), 0, conn),
                    "http visitor");
              });
}

asio::awaitable<void> relay::http_visitor(std::shared_ptr<link::link> l, tcp::socket socket,
                                          std::string name, std::string head, int attempt,
                                          admitted conn) {
  counted in_flight(active_streams_);
  boost::system::error_code ec;
  auto meta = visitor_metadata(socket, conn.peer, name);
  if (!meta) co_return;
  meta->scheme = proto::visitor_scheme::plain_http;
  auto s = l->open_stream(*meta);
  if (!s) {
    auto route = names_.pick(name, "", l->executor(), l.get());
    if (attempt < 3 && route.link && !stopping_) {
      auto next = std::move(route.link);
      move_socket(
          std::move(socket), next->executor(),
          [this, next, name, attempt, conn, head = std::move(head)](tcp::socket moved) mutable {
            spawn_logged(
                next->executor(),
                http_visitor(next, std::move(moved), name, std::move(head), attempt + 1, conn),
                "http visitor");
          });
      co_return;
    }
    socket.set_option(asio::socket_base::linger(true, 0), ec);
    co_return;
  }
  auto sending =
      s->write_all(std::span(reinterpret_cast<const std::uint8_t*>(head.data()), head.size()), ec);
  co_await std::move(sending);
  if (ec) {
    s->reset(proto::stream_status::cancelled);
    socket.set_option(asio::socket_base::linger(true, 0), ec);
    co_return;
  }
  co_await s->pump(socket);
}

}  // namespace burrow::relay
