// Per-source admission: sharded tables so accept loops on several threads rarely share a lock.
#include "core/source_limits.hpp"

#include <algorithm>
#include <cstring>

#include "core/address.hpp"
#include "core/settings.hpp"

namespace burrow {

source_limit_config source_limits_from(const layered_settings& s, source_limit_config c) {
  c.max_open =
      static_cast<std::uint32_t>(s.number_or("source-connections", c.max_open, 0, 1u << 24));
  c.rate = static_cast<std::uint32_t>(s.number_or("source-rate", c.rate, 0, 1u << 24));
  c.burst = static_cast<std::uint32_t>(s.number_or("source-burst", c.burst, 0, 1u << 24));
  if (c.rate != 0 && c.burst == 0)
    throw config_error("source-burst must be at least 1 while source-rate limits new connections");
  return c;
}

source_limits::source_limits(source_limit_config config) {
  configure(config);
}

source_limits::~source_limits() = default;

void source_limits::configure(source_limit_config config) {
  std::lock_guard lock(config_mutex_);
  config_ = config;
  unlimited_ = config.max_open == 0 && config.rate == 0;
}

source_limit_config source_limits::config() const {
  std::lock_guard lock(config_mutex_);
  return config_;
}

std::size_t source_limits::key_hash::operator()(const key& k) const noexcept {
  std::uint64_t a = 0, b = 0;
  std::memcpy(&a, k.data(), 8);
  std::memcpy(&b, k.data() + 8, 8);
  return std::hash<std::uint64_t>{}(a * 0x9e3779b97f4a7c15ULL ^ b);
}

source_limits::key source_limits::key_of(const boost::asio::ip::address& a) {
  key k{};
  if (auto u = unmapped(a); u.is_v4()) {
    auto bytes = u.to_v4().to_bytes();
    k[10] = 0xff;
    k[11] = 0xff;
    std::copy(bytes.begin(), bytes.end(), k.begin() + 12);
    return k;
  }
  auto bytes = a.to_v6().to_bytes();
  std::copy(bytes.begin(), bytes.begin() + 8, k.begin());  // the /64
  k[8] = 0x64;                                             // keeps a /64 apart from any IPv4 key
  return k;
}

source_limits::shard& source_limits::shard_of(const key& k) {
  return shards_[key_hash{}(k) % shard_count];
}

void source_limits::refill(entry& e, const source_limit_config& c, clock::time_point now) {
  if (c.rate == 0) return;
  double seconds = std::chrono::duration<double>(now - e.refilled).count();
  if (seconds > 0) {
    e.tokens = std::min<double>(std::max<std::uint32_t>(c.burst, 1), e.tokens + seconds * c.rate);
    e.refilled = now;
  }
}

source_limits::decision source_limits::admit(const boost::asio::ip::address& source,
                                             clock::time_point now) {
  decision d;
  if (unlimited_) return d;  // admitted, nothing to count
  auto c = config();
  auto k = key_of(source);
  auto& s = shard_of(k);
  {
    std::lock_guard lock(s.mutex);
    auto [it, fresh] = s.sources.try_emplace(k);
    auto& e = it->second;
    if (fresh) {
      e.tokens = std::max<std::uint32_t>(c.burst, 1);
      e.refilled = now;
    }
    refill(e, c, now);
    if (c.max_open != 0 && e.open >= c.max_open) {
      d.result = verdict::too_many_open;
      return d;
    }
    if (c.rate != 0) {
      if (e.tokens < 1) {
        d.result = verdict::too_fast;
        return d;
      }
      e.tokens -= 1;
    }
    ++e.open;
  }
  // The lease's deleter gives the slot back; the table outlives every lease (the relay owns both
  // and drains its sessions before it goes).
  d.held = std::shared_ptr<void>(new key(k), [this](void* p) {
    auto* kp = static_cast<key*>(p);
    release(*kp);
    delete kp;
  });
  return d;
}

void source_limits::release(const key& k) {
  auto& s = shard_of(k);
  std::lock_guard lock(s.mutex);
  auto it = s.sources.find(k);
  if (it != s.sources.end() && it->second.open > 0) --it->second.open;
}

std::size_t source_limits::sweep(clock::time_point now) {
  auto c = config();
  std::size_t left = 0;
  for (auto& s : shards_) {
    std::lock_guard lock(s.mutex);
    for (auto it = s.sources.begin(); it != s.sources.end();) {
      auto& e = it->second;
      refill(e, c, now);
      bool quiet = e.open == 0 && (c.rate == 0 || e.tokens >= std::max<std::uint32_t>(c.burst, 1));
      it = quiet ? s.sources.erase(it) : std::next(it);
    }
    left += s.sources.size();
  }
  return left;
}

std::size_t source_limits::tracked() const {
  std::size_t n = 0;
  for (auto& s : shards_) {
    std::lock_guard lock(s.mutex);
    n += s.sources.size();
  }
  return n;
}

}  // namespace burrow
