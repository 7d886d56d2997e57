// Name claims for end-to-end services, and the visitor-token check on each stream.
#include "relay/name_registry.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/secret.hpp"
#include "link/link.hpp"
#include "relay/replaced_notice.hpp"

namespace burrow::relay {

name_registry::name_registry(std::chrono::milliseconds grace) : grace_(grace) {}

proto::service_result name_registry::claim(const owner_id& owner, const proto::service_spec& spec,
                                           const std::shared_ptr<link::link>& link,
                                           std::shared_ptr<const http::access_rules> rules) {
  proto::service_result r;
  r.name = spec.name;
  std::lock_guard lock(mutex_);
  auto now = std::chrono::steady_clock::now();
  auto [it, fresh] = names_.try_emplace(spec.name);
  entry& e = it->second;
  if (!fresh && e.owner.token_id != owner.token_id) {
    bool reserved = e.links.empty() && e.grace_until > now;
    r.code = reserved ? "name_reserved" : "name_in_use";
    r.message = reserved
                    ? "the name " + spec.name +
                          " is reserved for the agent that held it; pick another --name"
                    : "the name " + spec.name + " is held by another agent; pick another --name";
    return r;
  }
  if (!fresh && e.owner.session != owner.session) {
    // The same token from a new agent process: the newest wins, as for ports.
    spdlog::warn("service {}: agent session {} replaces session {} (same token {})", spec.name,
                 owner.session.substr(0, 8), e.owner.session.substr(0, 8), owner.token_id);
    tell_replaced(e.links, spec.name, owner.session);
    e.links.clear();
  }
  e.owner = owner;
  e.kind = spec.kind;
  e.token_sha256 = spec.visitor_token_sha256;
  e.plain_http = spec.plain_http;
  e.rules = std::move(rules);
  bool attached = false;
  for (auto& w : e.links)
    if (w.lock() == link) attached = true;
  if (!attached) e.links.push_back(link);
  r.ok = true;
  return r;
}

void name_registry::detach(const link::link* gone) {
  std::lock_guard lock(mutex_);
  auto now = std::chrono::steady_clock::now();
  for (auto it = names_.begin(); it != names_.end();) {
    entry& e = it->second;
    bool had = !e.links.empty();
    std::erase_if(e.links, [&](const std::weak_ptr<link::link>& w) {
      auto l = w.lock();
      return !l || l.get() == gone;
    });
    if (had && e.links.empty()) {
      if (grace_.count() == 0) {
        spdlog::info("service {}: released (no agent)", it->first);
        it = names_.erase(it);
        continue;
      }
      e.grace_until = now + grace_;
      spdlog::info("service {}: agent gone; name reserved for its token for {}s", it->first,
                   std::chrono::duration_cast<std::chrono::seconds>(grace_).count());
    }
    ++it;
  }
}

name_registry::route name_registry::pick(const std::string& name, std::string_view visitor_token,
                                         const boost::asio::any_io_executor& preferred,
                                         const link::link* avoid) {
  route out;
  std::lock_guard lock(mutex_);
  auto it = names_.find(name);
  if (it == names_.end()) {
    out.status = proto::stream_status::no_service;
    out.reason = "no service named " + name + " on this relay";
    return out;
  }
  entry& e = it->second;
  out.found = true;
  out.kind = e.kind;
  out.plain_http = e.plain_http;
  out.rules = e.rules;
  if (!e.token_sha256.empty()) {
    // Hashing first makes the comparison's length fixed: nothing leaks through timing.
    if (visitor_token.empty() || !constant_time_equal(hex(sha256(visitor_token)), e.token_sha256)) {
      out.status = proto::stream_status::forbidden;
      out.reason = visitor_token.empty() ? "service " + name + " asks for a visitor token"
                                         : "the visitor token for " + name + " is not right";
      return out;
    }
  }
  // (A link's own state belongs to its thread; whether it can take a stream, open_stream tells.)
  std::shared_ptr<link::link> other, last_resort;
  for (std::size_t tries = 0; tries < e.links.size(); ++tries) {
    auto l = e.links[e.next++ % e.links.size()].lock();
    if (!l) continue;
    if (l.get() == avoid) {
      last_resort = std::move(l);
    } else if (l->executor() == preferred) {
      out.link = std::move(l);
      return out;
    } else if (!other) {
      other = std::move(l);
    }
  }
  if (other || last_resort) {
    out.link = other ? std::move(other) : std::move(last_resort);
    return out;
  }
  out.status = proto::stream_status::unreachable;
  out.reason = "service " + name + " is offline: its agent is not connected";
  return out;
}

std::optional<proto::tunnel_kind> name_registry::kind_held(std::string_view name,
                                                           const owner_id& owner) {
  std::lock_guard lock(mutex_);
  auto it = names_.find(name);
  if (it == names_.end() || it->second.owner.token_id != owner.token_id ||
      it->second.owner.session != owner.session)
    return std::nullopt;
  return it->second.kind;
}

bool name_registry::release(std::string_view name, const owner_id& owner) {
  std::lock_guard lock(mutex_);
  auto it = names_.find(name);
  if (it == names_.end() || it->second.owner.token_id != owner.token_id ||
      it->second.owner.session != owner.session)
    return false;
  names_.erase(it);
  return true;
}

std::size_t name_registry::expire(std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(mutex_);
  return std::erase_if(names_, [&](const auto& kv) {
    bool done = kv.second.links.empty() && kv.second.grace_until <= now;
    if (done) spdlog::info("service {}: name released after its grace period", kv.first);
    return done;
  });
}

std::size_t name_registry::count_in_grace(std::string_view token_id) {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(std::count_if(names_.begin(), names_.end(), [&](const auto& kv) {
    return kv.second.owner.token_id == token_id && kv.second.links.empty();
  }));
}

std::size_t name_registry::count(std::string_view token_id) {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (auto& [name, e] : names_) n += e.owner.token_id == token_id;
  return n;
}

bool name_registry::held_by(std::string_view name, std::string_view token_id) {
  std::lock_guard lock(mutex_);
  auto it = names_.find(name);
  return it != names_.end() && it->second.owner.token_id == token_id;
}

std::vector<std::string> name_registry::release_if(
    const std::function<bool(const std::string&, const owner_id&)>& drop) {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (auto it = names_.begin(); it != names_.end();) {
    if (drop(it->first, it->second.owner)) {
      out.push_back(it->first);
      it = names_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

void name_registry::set_grace(std::chrono::milliseconds grace) {
  std::lock_guard lock(mutex_);
  grace_ = grace;
}

std::size_t name_registry::size() {
  std::lock_guard lock(mutex_);
  return names_.size();
}

}  // namespace burrow::relay
