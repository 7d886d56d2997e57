// The relay's front door: per-source admission at accept, TCP keepalive, and the counters of
// what was accepted, refused and rejected, served on the metrics listener.
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <boost/asio/post.hpp>
#include <filesystem>

#include "core/acceptor.hpp"
#include "core/address.hpp"
#include "core/metrics_server.hpp"
#include "core/spawn.hpp"
#include "relay/port_registry.hpp"
#include "relay/public_port.hpp"
#include "relay/relay.hpp"

namespace burrow::relay {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

const char* listener_name(std::size_t i) {
  static const char* names[] = {"agent", "https", "http", "port"};
  return names[i];
}

}  // namespace

const char* relay::listener_title(listener which) {
  static const char* titles[] = {"agent listener", "HTTPS listener", "HTTP listener",
                                 "public port"};
  return titles[static_cast<std::size_t>(which)];
}

namespace {

std::size_t open_descriptors() {
  std::error_code ec;
  std::size_t n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

}  // namespace

void relay::register_metrics() {
  metrics_.describe("burrow_relay_connections_accepted_total",
                    "Connections admitted by the per-source limits, by listener.");
  metrics_.describe("burrow_relay_connections_refused_total",
                    "Connections closed at accept by a per-source limit, by listener and limit.");
  metrics_.describe("burrow_relay_accept_errors_total",
                    "Failed accepts (such as EMFILE); the listener pauses 100ms and goes on.");
  metrics_.describe("burrow_relay_rejected_total",
                    "Admitted connections turned away: bad TLS, a missed deadline, a bad hello...");
  for (std::size_t i = 0; i < listener_count; ++i) {
    std::string l = fmt::format("listener=\"{}\"", listener_name(i));
    counters_[i].accepted = &metrics_.get("burrow_relay_connections_accepted_total", l);
    counters_[i].refused_open = &metrics_.get("burrow_relay_connections_refused_total",
                                              l + ",limit=\"source-connections\"");
    counters_[i].refused_rate =
        &metrics_.get("burrow_relay_connections_refused_total", l + ",limit=\"source-rate\"");
    counters_[i].accept_errors = &metrics_.get("burrow_relay_accept_errors_total", l);
  }
  metrics_.describe("burrow_relay_streams", "Visitor connections and streams in flight.", "gauge");
  metrics_.gauge("burrow_relay_streams", "", [this] { return double(active_streams_.load()); });
  metrics_.describe("burrow_relay_links", "Links from agents and visitors.", "gauge");
  metrics_.gauge("burrow_relay_links", "", [this] {
    std::lock_guard lock(links_mutex_);
    return double(
        std::count_if(links_.begin(), links_.end(), [](auto& w) { return !w.expired(); }));
  });
  metrics_.describe("burrow_relay_sources_tracked",
                    "Source addresses the per-source limits currently track.", "gauge");
  metrics_.gauge("burrow_relay_sources_tracked", "", [this] { return double(sources_.tracked()); });
  metrics_.describe("burrow_relay_open_descriptors", "File descriptors the relay holds.", "gauge");
  metrics_.gauge("burrow_relay_open_descriptors", "", [] { return double(open_descriptors()); });
}

void relay::bind_metrics() {
  for (auto& text : config_.metrics_listen) {
    auto hp = parse_host_port(text, 0);
    boost::system::error_code ec;
    auto address = asio::ip::make_address(hp ? hp->host : "", ec);
    if (!hp || ec) throw std::runtime_error("metrics-listen '" + text + "' needs IP:PORT");
    try {
      metrics_acceptors_.push_back(
          make_acceptor(workers_.at(0).get_executor(), tcp::endpoint(address, hp->port)));
    } catch (const boost::system::system_error& e) {
      throw std::runtime_error("cannot serve metrics on " + text + ": " + e.code().message());
    }
  }
}

std::vector<tcp::endpoint> relay::metrics_endpoints() const {
  std::vector<tcp::endpoint> out;
  for (auto& a : metrics_acceptors_) out.push_back(a->local_endpoint());
  return out;
}

void relay::serve_metrics_listeners() {
  for (auto& a : metrics_acceptors_)
    spawn_logged(a->get_executor(), serve_metrics(*a, metrics_, config_.handshake_timeout),
                 "metrics listener");
}

std::optional<relay::admitted> relay::admit(int fd, const tcp::endpoint& peer, listener which) {
  auto& c = counters_[static_cast<std::size_t>(which)];
  auto d = sources_.admit(peer.address());
  if (d.result == source_limits::verdict::admitted) {
    c.accepted->fetch_add(1, std::memory_order_relaxed);
    return admitted{std::move(d.held), peer};
  }
  bool open = d.result == source_limits::verdict::too_many_open;
  (open ? c.refused_open : c.refused_rate)->fetch_add(1, std::memory_order_relaxed);
  std::uint64_t held_back = 0;
  if (refusal_log_.allow(held_back)) {
    auto limits = sources_.config();
    spdlog::warn("{}: refused a connection from {}: {} (limit {} = {}){}", listener_title(which),
                 peer.address().to_string(),
                 open ? "too many open connections from this source" : "new connections too fast",
                 open ? "source-connections" : "source-rate", open ? limits.max_open : limits.rate,
                 held_back ? fmt::format("; {} more refusals since the last line", held_back) : "");
  }
  ::linger reset{1, 0};  // closing sends a reset at once
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  return std::nullopt;
}

void relay::rejected(listener which, std::string_view reason, const std::string& who,
                     std::string_view detail, bool warn) {
  metrics_
      .get("burrow_relay_rejected_total",
           fmt::format("listener=\"{}\",reason=\"{}\"",
                       listener_name(static_cast<std::size_t>(which)), reason))
      .fetch_add(1, std::memory_order_relaxed);
  std::uint64_t held_back = 0;
  if (!rejection_log_[static_cast<std::size_t>(which)].allow(held_back)) return;
  spdlog::log(warn ? spdlog::level::warn : spdlog::level::info,
              "{}: connection from {} rejected ({}){}{}{}", listener_title(which), who, reason,
              detail.empty() ? "" : ": ", detail,
              held_back ? fmt::format("; {} more rejections since the last line", held_back) : "");
}

void relay::set_listeners_keepalive(std::chrono::seconds idle) {
  for (auto* list : {&agent_acceptors_, &https_acceptors_, &http_acceptors_})
    for (auto& a : *list) set_keepalive(*a, idle);
}

void relay::keep_listeners_alive(std::chrono::seconds idle) {
  // The relay's own listeners live on worker 0, and each public port on its executor: the
  // options are set there, never on a descriptor a close on another thread may be reusing.
  asio::post(workers_.at(0).get_executor(), [this, idle] { set_listeners_keepalive(idle); });
  registry_->for_each_listener([idle](public_port& p) { p.set_keepalive(idle); });
}

void relay::accept_failed(listener which) {
  counters_[static_cast<std::size_t>(which)].accept_errors->fetch_add(1, std::memory_order_relaxed);
}

}  // namespace burrow::relay
