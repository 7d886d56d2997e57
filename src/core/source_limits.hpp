// Per-source-address admission for every public listener: open connections and new connections
// per second (a token bucket with a burst), decided at accept before any byte is read. IPv4
// sources (and IPv4-mapped IPv6) count per address, IPv6 per /64, the block one host gets.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/ip/address.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace burrow {

class layered_settings;

struct source_limit_config {
  std::uint32_t max_open = 2048;  // open connections per source; 0: no limit
  std::uint32_t rate = 500;       // new connections per second per source; 0: no limit
  std::uint32_t burst = 2000;     // new connections a quiet source may open at once
};

// --source-connections, --source-rate and --source-burst over `defaults`; throws config_error.
source_limit_config source_limits_from(const layered_settings& s,
                                       source_limit_config defaults = {});

class source_limits {
 public:
  using clock = std::chrono::steady_clock;
  enum class verdict { admitted, too_many_open, too_fast };

  explicit source_limits(source_limit_config config = {});
  ~source_limits();
  source_limits(const source_limits&) = delete;
  source_limits& operator=(const source_limits&) = delete;

  // While a lease lives, its connection counts as open for its source. Copies share one count.
  using lease = std::shared_ptr<void>;
  struct decision {
    verdict result = verdict::admitted;
    lease held;  // set when admitted under a limit
  };
  decision admit(const boost::asio::ip::address& source, clock::time_point now = clock::now());

  // Thread-safe; connections already open stay open.
  void configure(source_limit_config config);
  source_limit_config config() const;

  // Forgets sources with nothing open and a full bucket; returns how many are still tracked.
  std::size_t sweep(clock::time_point now = clock::now());
  std::size_t tracked() const;

 private:
  using key = std::array<std::uint8_t, 16>;
  struct key_hash {
    std::size_t operator()(const key& k) const noexcept;
  };
  struct entry {
    std::uint32_t open = 0;
    double tokens = 0;
    clock::time_point refilled{};
  };
  struct shard {
    mutable std::mutex mutex;
    std::unordered_map<key, entry, key_hash> sources;
  };
  static constexpr std::size_t shard_count = 16;

  static key key_of(const boost::asio::ip::address& a);
  shard& shard_of(const key& k);
  void release(const key& k);
  static void refill(entry& e, const source_limit_config& c, clock::time_point now);

  std::array<shard, shard_count> shards_;
  mutable std::mutex config_mutex_;
  source_limit_config config_;
  std::atomic<bool> unlimited_{false};
};

}  // namespace burrow
