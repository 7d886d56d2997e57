// HTTPS share URLs on the relay: each connection's ClientHello is peeked (not consumed), its SNI
// names the service, and the untouched TLS bytes go to the agent in a stream. Unknown and
// offline names get a small page over TLS with the relay's own certificate for the domain.
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "core/acceptor.hpp"
#include "core/deadline.hpp"
#include "core/spawn.hpp"
#include "e2ee/secure_stream.hpp"
#include "http/duplex.hpp"
#include "http/forward_head.hpp"
#include "http/proxy.hpp"
#include "kinds/registry.hpp"
#include "link/stream.hpp"
#include "proto/client_hello.hpp"
#include "relay/relay.hpp"
#include "relay/visitor_info.hpp"

namespace burrow::relay {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// Big enough for the largest ClientHello we accept, cut into the smallest records.
constexpr std::size_t max_peek = 64 * 1024;
constexpr std::size_t first_peek = 4 * 1024;

struct peeked {
  proto::client_hello_result hello;
  bool eof = false;
};

// Reads the ClientHello without taking it off the socket, so what the agent (or the error
// page's TLS) receives is exactly what the visitor sent.
asio::awaitable<peeked> peek_client_hello(tcp::socket& socket) {
  peeked out;
  // Most ClientHellos are well under 2 KiB: start small, so a thousand visitors connecting at
  // once do not each hold 64 KiB, and grow only as far as the hello says it needs.
  std::vector<std::uint8_t> buf(first_peek);
  asio::steady_timer pause(socket.get_executor());
  bool grown = false;
  for (bool first = true;; first = false) {
    if (grown) {
      grown = false;  // the bytes are already there: look again at once
    } else if (first) {
      auto [ec] =
          co_await socket.async_wait(tcp::socket::wait_read, asio::as_tuple(asio::use_awaitable));
      if (ec) {
        out.eof = true;
        co_return out;
      }
    } else {
      // More is on its way (a hello split over segments, or a slow sender). The peeked bytes
      // stay readable, so readiness tells nothing new: look again in a moment.
      pause.expires_after(std::chrono::milliseconds(5));
      co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    ssize_t n = ::recv(socket.native_handle(), buf.data(), buf.size(), MSG_PEEK | MSG_DONTWAIT);
    if (n <= 0) {
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      out.eof = true;
      co_return out;
    }
    out.hello = proto::parse_client_hello({buf.data(), static_cast<std::size_t>(n)});
    if (out.hello.status != proto::hello_parse::incomplete) co_return out;
    // The peeked bytes stay readable after the visitor's FIN, so ask for the hang-up itself: a
    // visitor that sent half a hello and left is done now, not at the deadline.
    pollfd p{socket.native_handle(), POLLRDHUP, 0};
    if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
      out.eof = true;
      co_return out;
    }
    std::size_t wanted = static_cast<std::size_t>(n) + std::max<std::size_t>(out.hello.need, 1);
    if (wanted > buf.size()) {
      if (buf.size() == max_peek) {
        out.hello.status = proto::hello_parse::invalid;
        out.hello.reason = "ClientHello does not fit in 64 KiB";
        co_return out;
      }
      bool was_full = static_cast<std::size_t>(n) == buf.size();
      buf.resize(std::min(max_peek, std::max(wanted, 2 * buf.size())));
      grown = was_full;  // more may be waiting beyond what the small buffer could show
    }
  }
}

asio::awaitable<boost::system::error_code> tls_server_handshake(
    asio::ssl::stream<tcp::socket>& tls) {
  auto [ec] = co_await tls.async_handshake(asio::ssl::stream_base::server,
                                           asio::as_tuple(asio::use_awaitable));
  co_return ec;
}

// Reads the request head (at most 16 KiB) and answers with `response`.
asio::awaitable<void> answer(asio::ssl::stream<tcp::socket>& tls, std::string response) {
  std::string head;
  char buf[4096];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 16 * 1024) {
    auto [ec, n] =
        co_await tls.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;
    head.append(buf, n);
  }
  co_await asio::async_write(tls, asio::buffer(response), asio::as_tuple(asio::use_awaitable));
  co_await tls.async_shutdown(asio::as_tuple(asio::use_awaitable));
}

}  // namespace

void relay::bind_web(const std::vector<std::string>& addresses, bool given, std::uint16_t port,
                     const char* what, std::vector<std::unique_ptr<tcp::acceptor>>& out) {
  for (auto& text : addresses) {
    auto hp = parse_host_port(text, port);
    boost::system::error_code ec;
    auto address = asio::ip::make_address(hp && !hp->host.empty() ? hp->host : "0.0.0.0", ec);
    if (!hp || ec)
      throw std::runtime_error(std::string(what) + " address '" + text + "' needs an IP");
    try {
      out.push_back(make_acceptor(workers_.at(0).get_executor(), tcp::endpoint(address, hp->port)));
    } catch (const boost::system::system_error& e) {
      if (!given) {
        spdlog::warn("no {} on {}: {} (set --{})", what, text, e.code().message(),
                     port == 443 ? "https-listen" : "http-listen");
        continue;
      }
      throw std::runtime_error(std::string("cannot listen for ") + what + " on " + text + ": " +
                               e.code().message());
    }
  }
}

void relay::bind_https() {
  bind_web(config_.https_listen, config_.https_listen_given, 443, "HTTPS share URLs",
           https_acceptors_);
  if (!https_acceptors_.empty()) https_port_ = https_acceptors_.front()->local_endpoint().port();
  bind_web(config_.http_listen, config_.http_listen_given, 80, "plain HTTP", http_acceptors_);
}

std::vector<tcp::endpoint> relay::https_endpoints() const {
  std::vector<tcp::endpoint> out;
  for (auto& a : https_acceptors_) out.push_back(a->local_endpoint());
  return out;
}

std::vector<tcp::endpoint> relay::http_endpoints() const {
  std::vector<tcp::endpoint> out;
  for (auto& a : http_acceptors_) out.push_back(a->local_endpoint());
  return out;
}

asio::awaitable<void> relay::https_session(tcp::socket socket, admitted conn) {
  auto peeking = peek_client_hello(socket);
  auto got = co_await with_deadline(std::move(peeking), handshake_timeout());
  if (!got || got->eof) {  // silent or gone: nothing to answer
    rejected(listener::https, got ? "closed_early" : "client_hello_timeout", peer_text(conn.peer),
             got ? "closed before a whole ClientHello" : "no whole ClientHello in time");
    co_return;
  }
  if (got->hello.status != proto::hello_parse::ok) {
    rejected(listener::https, "not_client_hello", peer_text(conn.peer), got->hello.reason);
    co_return;
  }
  const std::string& sni = got->hello.server_name;
  const std::string suffix = "." + config_.domain;
  std::string name;
  if (sni.size() > suffix.size() && sni.ends_with(suffix))
    name = sni.substr(0, sni.size() - suffix.size());
  if (name.empty() || name.find('.') != std::string::npos) {
    auto answering = error_page(
        std::move(socket), 404,
        sni.empty() ? "no tunnel name: the client sent no server name" : "no tunnel named " + sni);
    co_await std::move(answering);
    co_return;
  }
  auto route = names_.pick(name, "", socket.get_executor());
  // This door carries the visitor's TLS or ends it; whatever else a kind says means not here.
  auto action = kinds::action_at(door::https, route);
  if (action != door_action::carry && action != door_action::end_tls) {
    auto answering = error_page(std::move(socket), 404, "no tunnel named " + name);
    co_await std::move(answering);
    co_return;
  }
  if (!route.link) {
    bool offline = route.status == proto::stream_status::unreachable;
    auto answering =
        error_page(std::move(socket), offline ? 502 : 404,
                   offline ? "tunnel " + name + " is offline" : "no tunnel named " + name);
    co_await std::move(answering);
    co_return;
  }
  auto l = std::move(route.link);
  if (action == door_action::end_tls) {
    move_socket(std::move(socket), l->executor(),
                [this, l, name, conn, rules = route.rules](tcp::socket moved) {
                  spawn_logged(l->executor(),
                               inspect_visitor(l, std::move(moved), name, rules, conn),
                               "inspect visitor");
                });
    co_return;
  }
  move_socket(std::move(socket), l->executor(), [this, l, name, conn](tcp::socket moved) {
    spawn_logged(l->executor(), https_visitor(l, std::move(moved), name, 0, conn), "https visitor");
  });
}

asio::awaitable<void> relay::https_visitor(std::shared_ptr<link::link> l, tcp::socket socket,
                                           std::string name, int attempt, admitted conn) {
  counted in_flight(active_streams_);
  boost::system::error_code ec;
  auto meta = visitor_metadata(socket, conn.peer, name);
  if (!meta) co_return;
  meta->sealed = true;  // the visitor's own TLS, to the agent (blind) or the service (passthrough)
  auto s = l->open_stream(*meta);
  if (!s) {
    // This link is full or closing: another of the agent's links may take the visitor.
    auto route = names_.pick(name, "", l->executor(), l.get());
    if (attempt < 3 && route.link && !stopping_) {
      auto next = std::move(route.link);
      move_socket(std::move(socket), next->executor(),
                  [this, next, name, attempt, conn](tcp::socket moved) {
                    spawn_logged(next->executor(),
                                 https_visitor(next, std::move(moved), name, attempt + 1, conn),
                                 "https visitor");
                  });
      co_return;
    }
    socket.set_option(asio::socket_base::linger(true, 0), ec);
    co_return;
  }
  co_await s->pump(socket);
}

asio::awaitable<void> relay::inspect_visitor(std::shared_ptr<link::link> l, tcp::socket socket,
                                             std::string name,
                                             std::shared_ptr<const http::access_rules> rules,
                                             [[maybe_unused]] admitted conn) {
  counted in_flight(active_streams_);
  auto meta = visitor_metadata(socket, conn.peer, name);
  if (!meta) co_return;
  meta->scheme = proto::visitor_scheme::https_ended;
  // Our TLS engine over the socket rather than asio's stream, which holds 68 KiB per visitor in
  // fixed buffers whether the visitor is busy or idle.
  e2ee::secure_stream tls(domain_tls_.native_handle(), socket, e2ee::tls_role::server, "");
  auto shaking = tls.handshake();
  auto shaken = co_await with_deadline(std::move(shaking), handshake_timeout());
  if (!shaken || *shaken) co_return;
  auto visitor = http::make_tls_duplex(tls, true);
  auto s = l->open_stream(*meta);
  if (!s) {
    auto answering =
        http::answer_and_close(*visitor, http::page_response(502, "tunnel " + name + " is busy"));
    co_await with_deadline(std::move(answering), handshake_timeout());
    co_return;
  }
  auto upstream = http::make_stream_duplex(s);
  http::proxy_options options;
  std::string host = name + "." + config_.domain;
  options.forwarded = {meta->visitor_address, "https", host};
  boost::system::error_code bad;
  auto visitor_ip = asio::ip::make_address(meta->visitor_address, bad);
  std::string who = meta->visitor_address;
  if (rules) {
    options.screen = [rules, visitor_ip, host, name, who](const http::request_head& head) {
      auto verdict = rules->check(head, visitor_ip);
      if (verdict == http::access_rules::verdict::allow) return std::string();
      spdlog::info("inspect {}: {} {} {} refused: {}", name, who, std::string(head.method_string()),
                   std::string(head.target()).substr(0, 200), http::describe(verdict));
      return http::refusal_response(verdict, host);
    };
  }
  options.on_response = [name, who](std::string_view method, std::string_view target,
                                    unsigned status) {
    spdlog::info("inspect {}: {} {} {} {}", name, who, method, target.substr(0, 200), status);
  };
  auto proxying = http::proxy(*visitor, *upstream, std::move(options));
  auto result = co_await std::move(proxying);
  if (!result.error.empty()) spdlog::debug("inspect {}: visitor {}: {}", name, who, result.error);
  s->finish();
}

asio::awaitable<void> relay::error_page(tcp::socket socket, int status, std::string message) {
  asio::ssl::stream<tcp::socket> tls(std::move(socket), domain_tls_);
  auto shaking = tls_server_handshake(tls);
  auto shaken = co_await with_deadline(std::move(shaking), handshake_timeout());
  if (!shaken || *shaken) co_return;
  auto answering = answer(tls, http::page_response(static_cast<unsigned>(status), message));
  co_await with_deadline(std::move(answering), handshake_timeout());
}

}  // namespace burrow::relay
