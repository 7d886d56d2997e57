// The forwarder: listeners on the first thread, each admitted visitor moved to the next thread,
// connected to its rule's target and pumped (forward/pump.hpp).
#include "forward/forwarder.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "core/acceptor.hpp"
#include "core/address.hpp"
#include "core/deadline.hpp"
#include "core/settings.hpp"
#include "core/spawn.hpp"
#include "forward/pump.hpp"

namespace burrow::forward {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

struct forwarder::listener {
  forward_rule rule;
  std::string label;                   // "LISTEN -> TARGET", for logs
  std::vector<tcp::endpoint> targets;  // every address the target resolved to, tried in order
  std::unique_ptr<tcp::acceptor> acceptor;
};

namespace {

// A visitor the forward could not serve: closed with an RST, so its client sees a refusal
// rather than a connection that ends as if the target had answered nothing.
void reset(tcp::socket& s) {
  error_code ec;
  s.set_option(asio::socket_base::linger(true, 0), ec);
  s.close(ec);
}

asio::awaitable<error_code> connect_to(tcp::socket& s, const std::vector<tcp::endpoint>& targets) {
  auto [ec, chosen] = co_await asio::async_connect(s, targets, asio::as_tuple(asio::use_awaitable));
  co_return ec;
}

asio::awaitable<error_code> write_header(tcp::socket& s, const std::string& header) {
  auto [ec, n] =
      co_await asio::async_write(s, asio::buffer(header), asio::as_tuple(asio::use_awaitable));
  co_return ec;
}

std::vector<tcp::endpoint> resolve_target(const std::string& text) {
  auto hp = parse_host_port(text);
  if (!hp || hp->host.empty() || hp->port == 0)
    throw config_error("forward target '" + text + "' must be HOST:PORT with a port above 0");
  asio::io_context resolver_context;
  tcp::resolver resolver(resolver_context);
  error_code ec;
  auto results = resolver.resolve(hp->host, std::to_string(hp->port), ec);
  if (ec || results.empty())
    throw config_error("cannot resolve forward target " + text + ": " + ec.message());
  std::vector<tcp::endpoint> out;
  for (const auto& r : results) out.push_back(r.endpoint());
  return out;
}

tcp::endpoint listen_endpoint(const std::string& text) {
  // A port alone listens on loopback, as `connect --listen` does: other hosts only when asked.
  const bool port_only = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  auto hp = parse_host_port(port_only ? "127.0.0.1:" + text : text);
  error_code ec;
  auto address = asio::ip::make_address(hp && !hp->host.empty() ? hp->host : "0.0.0.0", ec);
  if (!hp || ec)
    throw config_error("forward listen address '" + text +
                       "' must be PORT or IP:PORT (0.0.0.0:PORT for every interface)");
  return {address, hp->port};
}

}  // namespace

forwarder::forwarder(forward_config config)
    : config_(std::move(config)), workers_(std::max(1u, config_.threads)), limits_(config_.limits) {
  if (config_.rules.empty()) throw config_error("nothing to forward: give LISTEN TARGET");
}

forwarder::~forwarder() = default;

void forwarder::bind() {
  for (const auto& rule : config_.rules) {
    auto l = std::make_unique<listener>();
    l->rule = rule;
    l->label = rule.listen + " -> " + rule.target;
    l->targets = resolve_target(rule.target);
    const auto ep = listen_endpoint(rule.listen);
    try {
      l->acceptor = make_acceptor(workers_.at(0).get_executor(), ep);
    } catch (const boost::system::system_error& e) {
      throw config_error("cannot listen on " + rule.listen + ": " + e.code().message());
    }
    listeners_.push_back(std::move(l));
  }
}

std::vector<tcp::endpoint> forwarder::endpoints() const {
  std::vector<tcp::endpoint> out;
  for (const auto& l : listeners_) out.push_back(l->acceptor->local_endpoint());
  return out;
}

void forwarder::accept_on(listener& l) {
  l.acceptor->async_accept(workers_.next(), [this, &l](error_code ec, tcp::socket s) {
    if (draining_ || ec == asio::error::operation_aborted) return;
    if (ec) {
      // Out of descriptors, say: the visitor waits in the queue; try again in a moment.
      std::uint64_t held = 0;
      if (failures_.allow(held))
        spdlog::warn("forward {}: accept failed: {}", l.label, ec.message());
      auto timer = std::make_shared<asio::steady_timer>(l.acceptor->get_executor(),
                                                        std::chrono::milliseconds(100));
      timer->async_wait([this, &l, timer](error_code) {
        if (!draining_) accept_on(l);
      });
      return;
    }
    error_code peer_ec;
    const auto peer = s.remote_endpoint(peer_ec);
    auto decision = limits_.admit(peer_ec ? asio::ip::address() : unmapped(peer.address()));
    if (decision.result != source_limits::verdict::admitted) {
      std::uint64_t held = 0;
      if (refusals_.allow(held))
        spdlog::info("forward {}: refused {}: {}{}", l.label, address_text(peer.address()),
                     decision.result == source_limits::verdict::too_many_open
                         ? "too many open connections from it (--source-connections)"
                         : "new connections too fast (--source-rate)",
                     held ? fmt::format(" ({} more not logged)", held) : "");
      reset(s);
    } else {
      // The socket was accepted onto the next thread's context; serve it there.
      auto ex = s.get_executor();
      asio::post(ex, [this, &l, s = std::move(s), lease = std::move(decision.held)]() mutable {
        serve(l, std::move(s), std::move(lease));
      });
    }
    accept_on(l);
  });
}

void forwarder::serve(listener& l, tcp::socket visitor, source_limits::lease lease) {
  open_.fetch_add(1, std::memory_order_relaxed);
  auto ex = visitor.get_executor();
  auto session = [](forwarder* self, listener* l, tcp::socket visitor,
                    source_limits::lease lease) -> asio::awaitable<void> {
    struct counted {
      std::atomic<std::size_t>& n;
      ~counted() { n.fetch_sub(1, std::memory_order_relaxed); }
    } count{self->open_};
    tcp::socket target(visitor.get_executor());
    auto connected =
        co_await with_deadline(connect_to(target, l->targets), self->config_.connect_timeout);
    error_code ec = connected ? *connected : asio::error::timed_out;
    if (!ec && l->rule.proxy != proto::proxy_version::none) {
      error_code local_ec, peer_ec;
      const auto source = visitor.remote_endpoint(peer_ec);
      const auto destination = visitor.local_endpoint(local_ec);
      ec = peer_ec ? peer_ec : local_ec;
      if (!ec) {
        auto wrote = co_await with_deadline(
            write_header(target, proto::proxy_header(l->rule.proxy, source, destination)),
            self->config_.connect_timeout);
        ec = wrote ? *wrote : asio::error::timed_out;
      }
    }
    if (ec) {
      std::uint64_t held = 0;
      if (self->failures_.allow(held))
        spdlog::warn("forward {}: cannot reach the target: {}{}", l->label, ec.message(),
                     held ? fmt::format(" ({} more not logged)", held) : "");
      reset(visitor);
      co_return;
    }
    auto moved = co_await pump(visitor, target);
    spdlog::debug("forward {}: {} bytes in, {} out{}", l->label, moved.bytes_in, moved.bytes_out,
                  moved.failed ? ", ended by an error" : "");
    (void)lease;  // counted against its source until here
  };
  spawn_logged(ex, session(this, &l, std::move(visitor), std::move(lease)), "forward");
}

void forwarder::begin_drain() {
  draining_ = true;
  for (auto& l : listeners_) {
    error_code ec;
    l->acceptor->close(ec);
  }
  const auto open = open_.load();
  if (open == 0) {
    workers_.stop();
    return;
  }
  spdlog::info("stopped accepting; {} connection(s) may finish within {} ms", open,
               config_.drain_timeout.count());
  auto waiting = [](forwarder* self) -> asio::awaitable<void> {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    const auto until = std::chrono::steady_clock::now() + self->config_.drain_timeout;
    while (self->open_.load() > 0 && std::chrono::steady_clock::now() < until) {
      timer.expires_after(std::chrono::milliseconds(50));
      co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    if (const auto left = self->open_.load())
      spdlog::warn("drain timeout: closing {} connection(s)", left);
    self->workers_.stop();
  };
  spawn_logged(workers_.at(0).get_executor(), waiting(this), "forward drain");
}

int forwarder::run() {
  for (auto& l : listeners_) {
    spdlog::info("forwarding {} (listening on {})", l->label,
                 format_host_port(l->acceptor->local_endpoint().address().to_string(),
                                  l->acceptor->local_endpoint().port()));
    accept_on(*l);
  }
  workers_.run([this] { begin_drain(); });
  return 0;
}

}  // namespace burrow::forward
