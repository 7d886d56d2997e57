// Port claims: who may take a port, reconnects that take their port back, and grace periods.
#include "relay/port_registry.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "link/link.hpp"
#include "relay/public_port.hpp"
#include "relay/replaced_notice.hpp"

namespace burrow::relay {

port_registry::port_registry(port_range range, std::chrono::milliseconds grace,
                             std::string advertise_host, listener_factory factory)
    : range_(range),
      cursor_(range.first),
      grace_(grace),
      advertise_host_(std::move(advertise_host)),
      factory_(std::move(factory)) {}

proto::service_result port_registry::ok(std::uint16_t port, const std::string& name) const {
  proto::service_result r;
  r.name = name;
  r.ok = true;
  r.remote_port = port;
  r.public_address = format_host_port(advertise_host_, port);
  return r;
}

std::shared_ptr<public_port> port_registry::bind(std::uint16_t port, const std::string& service,
                                                 std::string& error) {
  auto listener = factory_(port, service, error);
  if (listener) listener->start();
  return listener;
}

proto::service_result port_registry::claim(const owner_id& owner, const proto::service_spec& spec,
                                           const std::shared_ptr<link::link>& link,
                                           const std::optional<std::vector<port_range>>& allowed) {
  auto refuse = [&](std::string code, std::string message) {
    return proto::refused(spec, std::move(code), std::move(message));
  };
  auto attach = [&](entry& e) {
    for (auto& w : e.links)
      if (w.lock() == link) return;
    e.links.push_back(link);
  };
  std::lock_guard lock(mutex_);

  std::uint16_t port = spec.remote_port;
  if (port == 0) {
    // Another link of the same agent may have claimed this service already.
    for (auto& [p, e] : ports_) {
      if (e.owner.session == owner.session && e.owner.token_id == owner.token_id &&
          e.service == spec.name) {
        port = p;
        break;
      }
    }
  }
  auto permitted = [&](std::uint16_t p) {
    return !allowed || std::any_of(allowed->begin(), allowed->end(),
                                   [p](const port_range& r) { return r.contains(p); });
  };
  if (port != 0 && !permitted(port))
    return refuse("not_allowed",
                  "port " + std::to_string(port) + " is outside what this agent's token may claim");

  if (port != 0) {
    auto it = ports_.find(port);
    if (it != ports_.end()) {
      entry& e = it->second;
      if (e.owner.token_id != owner.token_id) {
        auto now = std::chrono::steady_clock::now();
        if (!e.listener && e.grace_until > now)
          return refuse("port_reserved",
                        "port " + std::to_string(port) +
                            " is reserved for the agent that held it "
                            "for " +
                            std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                               e.grace_until - now)
                                               .count() +
                                           1) +
                            " more seconds");
        return refuse("port_in_use", "port " + std::to_string(port) + " is held by another agent");
      }
      if (e.owner.session != owner.session) {
        // The same token from a new agent process: the newest agent wins, so an agent that
        // restarted never waits for its old, perhaps half-open, links to time out.
        spdlog::warn("port {}: agent session {} replaces session {} (same token {})", port,
                     owner.session.substr(0, 8), e.owner.session.substr(0, 8), owner.token_id);
        tell_replaced(e.links, e.service, owner.session);
        e.owner = owner;
        e.links.clear();
      }
      e.service = spec.name;
      if (!e.listener) {
        std::string error;
        e.listener = bind(port, spec.name, error);
        if (!e.listener) return refuse("port_unavailable", error);
        spdlog::info("port {}: reclaimed by its agent (service {})", port, spec.name);
      }
      attach(e);
      return ok(port, spec.name);
    }
    if (!range_.any() && !range_.contains(port))
      return refuse("port_not_allowed",
                    "port " + std::to_string(port) + " is outside the relay's public range " +
                        std::to_string(range_.first) + "-" + std::to_string(range_.last));
    if (range_.any() && port < 1024)
      return refuse("port_not_allowed", "ports below 1024 are not offered by this relay");
    std::string error;
    auto listener = bind(port, spec.name, error);
    if (!listener) return refuse("port_unavailable", error);
    entry e{spec.name, owner, {link}, listener, {}, 0};
    ports_.emplace(port, std::move(e));
    return ok(port, spec.name);
  }

  // Any free port: the kernel's choice, or the next free one in the range.
  std::string error;
  if (allowed) {
    // The token's own ranges (already cut to the relay's): the first free port in them.
    for (auto& r : *allowed) {
      for (std::uint32_t p = r.first; p <= r.last; ++p) {
        auto candidate = static_cast<std::uint16_t>(p);
        if (ports_.count(candidate)) continue;
        auto listener = bind(candidate, spec.name, error);
        if (!listener) continue;
        ports_.emplace(candidate, entry{spec.name, owner, {link}, listener, {}, 0});
        return ok(candidate, spec.name);
      }
    }
    return refuse(allowed->empty() ? "not_allowed" : "no_free_port",
                  allowed->empty() ? "this agent's token may claim no port in the relay's range"
                                   : "every port this agent's token may claim is taken");
  }
  if (range_.any()) {
    for (int attempt = 0; attempt < 8; ++attempt) {
      auto listener = bind(0, spec.name, error);
      if (!listener) continue;
      std::uint16_t p = listener->port();
      if (ports_.count(p)) {  // reserved in grace by someone else: keep looking
        listener->close();
        continue;
      }
      ports_.emplace(p, entry{spec.name, owner, {link}, listener, {}, 0});
      return ok(p, spec.name);
    }
    return refuse("no_free_port", "could not bind a public port: " + error);
  }
  std::uint32_t span = std::uint32_t{range_.last} - range_.first + 1;
  for (std::uint32_t i = 0; i < span; ++i) {
    std::uint16_t p = cursor_;
    cursor_ = cursor_ == range_.last ? range_.first : static_cast<std::uint16_t>(cursor_ + 1);
    if (ports_.count(p)) continue;
    auto listener = bind(p, spec.name, error);
    if (!listener) continue;
    ports_.emplace(p, entry{spec.name, owner, {link}, listener, {}, 0});
    return ok(p, spec.name);
  }
  return refuse("no_free_port", "every port in the relay's range " + std::to_string(range_.first) +
                                    "-" + std::to_string(range_.last) + " is taken");
}

void port_registry::detach(const link::link* gone) {
  std::lock_guard lock(mutex_);
  auto now = std::chrono::steady_clock::now();
  for (auto it = ports_.begin(); it != ports_.end();) {
    entry& e = it->second;
    std::erase_if(e.links, [&](const std::weak_ptr<link::link>& w) {
      auto l = w.lock();
      return !l || l.get() == gone;
    });
    if (e.links.empty() && e.listener) {
      // Visitors now get a refused connection at once instead of waiting on a dead agent.
      e.listener->close();
      e.listener.reset();
      e.grace_until = now + grace_;
      if (grace_.count() == 0) {
        spdlog::info("port {}: released (service {} has no agent)", it->first, e.service);
        it = ports_.erase(it);
        continue;
      }
      spdlog::info("port {}: agent gone; reserved for its token for {}s", it->first,
                   std::chrono::duration_cast<std::chrono::seconds>(grace_).count());
    }
    ++it;
  }
}

port_registry::route port_registry::pick(std::uint16_t port) {
  std::lock_guard lock(mutex_);
  auto it = ports_.find(port);
  if (it == ports_.end()) return {};
  entry& e = it->second;
  for (std::size_t tries = 0; tries < e.links.size(); ++tries) {
    if (auto l = e.links[e.next++ % e.links.size()].lock()) return {std::move(l), e.service};
  }
  return {};
}

std::size_t port_registry::expire(std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(mutex_);
  return std::erase_if(ports_, [&](const auto& kv) {
    const entry& e = kv.second;
    bool done = !e.listener && e.links.empty() && e.grace_until <= now;
    if (done) spdlog::info("port {}: released after its grace period", kv.first);
    return done;
  });
}

void port_registry::close_all() {
  std::lock_guard lock(mutex_);
  for (auto& [p, e] : ports_)
    if (e.listener) e.listener->close();
}

void port_registry::for_each_listener(const std::function<void(public_port&)>& fn) {
  std::lock_guard lock(mutex_);
  for (auto& [p, e] : ports_)
    if (e.listener) fn(*e.listener);
}

std::size_t port_registry::count_in_grace(std::string_view token_id) {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(std::count_if(ports_.begin(), ports_.end(), [&](const auto& kv) {
    return kv.second.owner.token_id == token_id && !kv.second.listener;
  }));
}

std::size_t port_registry::count(std::string_view token_id) {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(std::count_if(ports_.begin(), ports_.end(), [&](const auto& kv) {
    return kv.second.owner.token_id == token_id;
  }));
}

bool port_registry::holds(const owner_id& owner, const proto::service_spec& spec) {
  std::lock_guard lock(mutex_);
  if (spec.remote_port != 0) {
    auto it = ports_.find(spec.remote_port);
    return it != ports_.end() && it->second.owner.token_id == owner.token_id;
  }
  return std::any_of(ports_.begin(), ports_.end(), [&](const auto& kv) {
    return kv.second.owner.token_id == owner.token_id && kv.second.owner.session == owner.session &&
           kv.second.service == spec.name;
  });
}

std::vector<std::string> port_registry::release_if(
    const std::function<bool(std::uint16_t, const owner_id&)>& drop) {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (auto it = ports_.begin(); it != ports_.end();) {
    if (!drop(it->first, it->second.owner)) {
      ++it;
      continue;
    }
    if (it->second.listener) it->second.listener->close();
    out.push_back(std::to_string(it->first) + " (" + it->second.service + ")");
    it = ports_.erase(it);
  }
  return out;
}

void port_registry::set_grace(std::chrono::milliseconds grace) {
  std::lock_guard lock(mutex_);
  grace_ = grace;
}

std::size_t port_registry::size() {
  std::lock_guard lock(mutex_);
  return ports_.size();
}

}  // namespace burrow::relay
