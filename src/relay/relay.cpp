// Relay: agent handshake and authentication, registration, visitor hand-off and graceful drain.
#include "relay/relay.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/host_name.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/acceptor.hpp"
#include "core/deadline.hpp"
#include "core/error_text.hpp"
#include "core/heap.hpp"
#include "core/run_on.hpp"
#include "core/secret.hpp"
#include "core/spawn.hpp"
#include "kinds/registry.hpp"
#include "link/drain.hpp"
#include "link/handshake.hpp"
#include "link/link.hpp"
#include "link/stream.hpp"
#include "proto/client_hello.hpp"
#include "relay/public_port.hpp"
#include "relay/visitor_info.hpp"
#include "tls/contexts.hpp"

namespace burrow::relay {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

bool wildcard(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]";
}

}  // namespace

relay::relay(relay_config config, relay_state state)
    : config_(std::move(config)),
      state_(std::move(state)),
      sources_(config_.source),
      tcp_keepalive_(config_.tcp_keepalive),
      workers_(config_.workers ? config_.workers : usable_cores()),
      tls_(tls::make_server_context(state_.server, {"burrow/1"})),
      domain_tls_(tls::make_web_server_context(
          tls::make_leaf(state_.ca, config_.domain, {config_.domain, "*." + config_.domain}, {},
                         std::chrono::hours(24 * 90)))),
      names_(config_.grace),
      tokens_(state_.agent_token, config_.tokens_file),
      handshake_timeout_(config_.handshake_timeout),
      drain_timeout_(config_.drain_timeout),
      stream_idle_timeout_(config_.limits.stream_idle_timeout),
      share_cert_lifetime_(config_.share_cert_lifetime),
      loaded_(config_),
      hangup_(workers_.at(0), SIGHUP) {  // installed now: a SIGHUP never kills a starting relay
  tokens_.load();
  register_metrics();

  advertise_ = config_.advertise;
  if (advertise_.empty() && !config_.listen.empty()) {
    auto hp = parse_host_port(config_.listen.front(), default_agent_port);
    if (hp && !wildcard(hp->host)) advertise_ = hp->host;
  }
  if (advertise_.empty()) advertise_ = asio::ip::host_name();

  registry_ = std::make_unique<port_registry>(
      config_.ports, config_.grace, advertise_,
      [this](std::uint16_t port, std::string_view service,
             std::string& error) -> std::shared_ptr<public_port> {
        try {
          auto admit_visitor = [this](tcp::socket s, const tcp::endpoint& peer, std::uint16_t p) {
            if (auto conn = admit(s.native_handle(), peer, listener::port))
              on_visitor(std::move(s), p, 0, std::move(*conn));
          };
          // Called with the registry locked, which keep_listeners_alive() also takes: a reload
          // of tcp-keepalive reaches this port either here or there.
          return std::make_shared<public_port>(
              workers_.next().get_executor(), config_.public_bind, port, admit_visitor,
              tcp_keepalive_.load(),
              counters_[static_cast<std::size_t>(listener::port)].accept_errors);
        } catch (const std::exception& e) {
          error = "cannot listen on port " + std::to_string(port) + " for service " +
                  std::string(service) + ": " + error_text(e);
          return nullptr;
        }
      });
}

relay::~relay() = default;

void relay::bind() {
  for (auto& text : config_.listen) {
    auto hp = parse_host_port(text, default_agent_port);
    if (!hp) throw std::runtime_error("listen address '" + text + "' is not HOST:PORT");
    boost::system::error_code ec;
    auto address = asio::ip::make_address(hp->host.empty() ? "0.0.0.0" : hp->host, ec);
    if (ec) throw std::runtime_error("listen address '" + text + "' needs an IP address");
    try {
      agent_acceptors_.push_back(
          make_acceptor(workers_.at(0).get_executor(), tcp::endpoint(address, hp->port)));
    } catch (const boost::system::system_error& e) {
      bool no_family = e.code() == asio::error::address_family_not_supported ||
                       e.code() == boost::system::errc::address_not_available;
      if (no_family && address.is_v6() && config_.listen.size() > 1) {
        spdlog::warn("not listening on {}: {}", text, e.code().message());
        continue;
      }
      throw std::runtime_error("cannot listen for agents on " + text + ": " + e.code().message());
    }
  }
  if (agent_acceptors_.empty()) throw std::runtime_error("no agent listener could be bound");
  bind_https();
  bind_metrics();
  set_listeners_keepalive(tcp_keepalive_.load());  // no accept loop runs yet
}

std::vector<tcp::endpoint> relay::agent_endpoints() const {
  std::vector<tcp::endpoint> out;
  for (auto& a : agent_acceptors_) out.push_back(a->local_endpoint());
  return out;
}

int relay::run() {
  auto ex = workers_.at(0).get_executor();
  for (auto& a : agent_acceptors_)
    spawn_logged(ex, accept_loop(*a, listener::agent, &relay::link_session), "agent listener");
  for (auto& a : https_acceptors_)
    spawn_logged(ex, accept_loop(*a, listener::https, &relay::https_session), "HTTPS listener");
  for (auto& a : http_acceptors_)
    spawn_logged(ex, accept_loop(*a, listener::http, &relay::http_session), "HTTP listener");
  serve_metrics_listeners();
  spawn_logged(ex, housekeeping(), "housekeeping");
  spawn_logged(ex, trim_heap_periodically(stopping_), "heap trim");
  wait_hangup();
  workers_.run([this, ex] { spawn_logged(ex, shutdown(), "shutdown"); });
  return 0;
}

asio::awaitable<void> relay::accept_loop(tcp::acceptor& acceptor, listener which,
                                         session_fn session) {
  std::string what = listener_title(which);
  asio::steady_timer pause(acceptor.get_executor());
  tcp::endpoint peer;
  for (;;) {
    auto [ec, socket] =
        co_await acceptor.async_accept(workers_.next(), peer, asio::as_tuple(asio::use_awaitable));
    if (stopping_ || ec == asio::error::operation_aborted) co_return;
    if (ec) {
      // EMFILE and the like: wait and go on; the listener never ends on its own.
      accept_failed(which);
      spdlog::warn("{}: accept failed: {}; retrying in 100ms", what, ec.message());
      pause.expires_after(std::chrono::milliseconds(100));
      co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
      continue;
    }
    auto conn = admit(socket.native_handle(), peer, which);
    if (!conn) continue;
    auto ex = socket.get_executor();
    spawn_logged(ex, (this->*session)(std::move(socket), std::move(*conn)), what);
  }
}

namespace {

struct agent_open {
  std::shared_ptr<link::stream> stream;
  proto::stream_status status = proto::stream_status::ok;
  std::string reason;
};

// On the agent link's thread: opens the stream and waits for the agent's answer.
asio::awaitable<agent_open> open_on_agent(std::shared_ptr<link::link> l, proto::open_metadata meta,
                                          std::chrono::milliseconds limit) {
  agent_open out;
  auto s = l->open_stream(meta);
  if (!s) {
    out.status = proto::stream_status::overloaded;
    out.reason = "the agent's link is full or closing";
    co_return out;
  }
  auto waiting = s->wait_open_result();
  auto status = co_await with_deadline(std::move(waiting), limit);
  if (!status) {
    s->reset(proto::stream_status::unreachable);
    l->stream_finished(s->id());
    out.status = proto::stream_status::unreachable;
    out.reason = "the agent did not answer in time";
    co_return out;
  }
  if (*status != proto::stream_status::ok) {
    out.status = *status;
    out.reason = s->refusal_reason();
    l->stream_finished(s->id());
    co_return out;
  }
  out.stream = std::move(s);
  co_return out;
}

asio::awaitable<void> reset_and_finish(std::shared_ptr<link::stream> s) {
  s->reset(proto::stream_status::cancelled);
  s->finish();
  co_return;
}

}  // namespace

asio::awaitable<void> relay::visitor_stream(std::shared_ptr<link::link> l,
                                            std::shared_ptr<link::stream> s,
                                            proto::open_metadata meta) {
  counted in_flight(active_streams_);
  std::string token = std::move(meta.visitor_token);
  meta.visitor_token.clear();  // the agent never sees it
  meta.sealed = true;  // TLS between burrow connect and the agent, whatever the visitor said
  agent_open opened;
  const link::link* full = nullptr;
  for (int attempt = 0; attempt < 3 && !opened.stream; ++attempt) {
    auto route = names_.pick(meta.service, token, l->executor(), full);
    if (kinds::action_at(door::connect, route) != door_action::carry) {
      opened.status = proto::stream_status::no_service;
      opened.reason = "no service named " + meta.service + " on this relay";
      break;
    }
    if (!route.link) {
      opened.status = route.status;
      opened.reason = std::move(route.reason);
      break;
    }
    auto opening =
        run_on(route.link->executor(), open_on_agent(route.link, meta, handshake_timeout()));
    opened = co_await std::move(opening);
    // Only a full or closing link is worth another try; the agent's own answers are final.
    if (opened.status != proto::stream_status::overloaded) break;
    full = route.link.get();
  }
  if (!opened.stream) {
    if (!s->is_reset()) l->refuse(*s, opened.status, opened.reason);
    l->stream_finished(s->id());
    co_return;
  }
  if (s->is_reset() || stopping_) {  // the visitor left while the agent was answering
    auto ex = opened.stream->executor();
    auto dropping = run_on(ex, reset_and_finish(opened.stream));
    co_await std::move(dropping);
    l->stream_finished(s->id());
    co_return;
  }
  l->accept(*s);
  // The two streams carry each other, and this coroutine's frame goes now; the count of streams
  // in flight (which the drain waits for) goes with the join, once both streams are finished.
  link::stream::join(s, opened.stream, [held = std::make_shared<counted>(active_streams_)] {});
}

void relay::on_visitor(tcp::socket socket, std::uint16_t port, int attempt, admitted conn) {
  auto route = registry_->pick(port);
  boost::system::error_code ec;
  if (!route.link || stopping_) {
    socket.set_option(asio::socket_base::linger(true, 0), ec);
    return;  // closing with an RST refuses the visitor at once
  }
  auto l = std::move(route.link);
  auto ex = l->executor();
  move_socket(
      std::move(socket), ex,
      [this, l, port, attempt, conn, service = std::move(route.service)](tcp::socket moved) {
        spawn_logged(l->executor(),
                     visitor_session(l, std::move(moved), port, service, attempt, conn), "visitor");
      });
}

asio::awaitable<void> relay::visitor_session(std::shared_ptr<link::link> l, tcp::socket socket,
                                             std::uint16_t port, std::string service, int attempt,
                                             admitted conn) {
  counted in_flight(active_streams_);
  boost::system::error_code ec;
  auto meta = visitor_metadata(socket, conn.peer, std::move(service));
  if (!meta) co_return;
  auto s = l->open_stream(*meta);
  if (!s) {
    // This link is full or going away; another link of the same agent may take the visitor.
    if (attempt < 3 && !stopping_) {
      on_visitor(std::move(socket), port, attempt + 1, std::move(conn));
      co_return;
    }
    socket.set_option(asio::socket_base::linger(true, 0), ec);
    co_return;
  }
  co_await s->pump(socket);
}

asio::awaitable<void> relay::housekeeping() {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!stopping_) {
    timer.expires_after(std::chrono::seconds(1));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    registry_->expire(std::chrono::steady_clock::now());
    names_.expire(std::chrono::steady_clock::now());
    sources_.sweep();
    reload_tokens(false);
    std::lock_guard lock(links_mutex_);
    std::erase_if(links_, [](auto& w) { return w.expired(); });
  }
}

asio::awaitable<void> relay::shutdown() {
  if (stopping_.exchange(true)) co_return;
  boost::system::error_code ignored;
  hangup_.cancel(ignored);
  for (auto* list : {&agent_acceptors_, &https_acceptors_, &http_acceptors_, &metrics_acceptors_})
    for (auto& a : *list) {
      boost::system::error_code ec;
      a->close(ec);
    }
  registry_->close_all();
  std::vector<std::shared_ptr<link::link>> links;
  {
    std::lock_guard lock(links_mutex_);
    for (auto& w : links_)
      if (auto l = w.lock()) links.push_back(std::move(l));
  }
  // Named first: the call's temporaries must not live inside the co_await expression.
  auto drain = link::drain_links(std::move(links), active_streams_, drain_timeout_.load(), "relay");
  co_await std::move(drain);
  spdlog::info("relay stopped");
  workers_.stop();
}

}  // namespace burrow::relay
