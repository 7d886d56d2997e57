// Accept loops of public ports: errors such as EMFILE pause the loop briefly, never end it.
#include "relay/public_port.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/acceptor.hpp"
#include "core/spawn.hpp"

namespace burrow::relay {

namespace asio = boost::asio;
using asio::ip::tcp;

public_port::public_port(asio::any_io_executor ex, const std::vector<std::string>& addresses,
                         std::uint16_t port, visitor_handler on_visitor,
                         std::chrono::seconds keepalive, std::atomic<std::uint64_t>* accept_errors)
    : executor_(std::move(ex)),
      port_(port),
      on_visitor_(std::move(on_visitor)),
      accept_errors_(accept_errors) {
  for (auto& text : addresses) {
    auto address = asio::ip::make_address(text);
    try {
      acceptors_.push_back(make_acceptor(executor_, tcp::endpoint(address, port_)));
    } catch (const boost::system::system_error& e) {
      // A host without IPv6 still serves IPv4, but the first address must bind.
      bool no_family = e.code() == asio::error::address_family_not_supported ||
                       e.code() == boost::system::errc::address_not_available;
      if (acceptors_.empty() || !no_family) throw;
      spdlog::debug("public port {}: {} not available here: {}", port_, text, e.code().message());
      continue;
    }
    burrow::set_keepalive(*acceptors_.back(), keepalive);
    if (port_ == 0) port_ = acceptors_.back()->local_endpoint().port();
  }
}

void public_port::start() {
  for (auto& a : acceptors_)
    spawn_logged(executor_, accept_loop(*a), "public port " + std::to_string(port_));
}

void public_port::close() {
  asio::post(executor_, [self = shared_from_this()] {
    for (auto& a : self->acceptors_) {
      boost::system::error_code ec;
      a->close(ec);
    }
  });
}

void public_port::set_keepalive(std::chrono::seconds idle) {
  asio::post(executor_, [self = shared_from_this(), idle] {
    for (auto& a : self->acceptors_) burrow::set_keepalive(*a, idle);
  });
}

asio::awaitable<void> public_port::accept_loop(tcp::acceptor& acceptor) {
  auto self = shared_from_this();
  asio::steady_timer pause(executor_);
  tcp::endpoint peer;
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(peer, asio::as_tuple(asio::use_awaitable));
    if (!acceptor.is_open() || ec == asio::error::operation_aborted) co_return;
    if (ec) {
      // Out of descriptors or memory: existing tunnels keep working; try again shortly.
      if (accept_errors_) accept_errors_->fetch_add(1, std::memory_order_relaxed);
      spdlog::warn("public port {}: accept failed: {}; retrying in 100ms", port_, ec.message());
      pause.expires_after(std::chrono::milliseconds(100));
      co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
      continue;
    }
    on_visitor_(std::move(socket), peer, port_);
  }
}

}  // namespace burrow::relay
