// A token bucket shared by many streams on many threads (the relay's bandwidth cap per agent
// token). Callers move bytes first and then wait what charge() says, so the average holds and
// flow control pushes back on the sender while they wait; nothing is ever dropped.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

namespace burrow::link {

class rate_limiter {
 public:
  // Bytes per second; 0: unlimited.
  explicit rate_limiter(std::uint64_t rate = 0);
  rate_limiter(const rate_limiter&) = delete;
  rate_limiter& operator=(const rate_limiter&) = delete;

  void set_rate(std::uint64_t rate);
  std::uint64_t rate() const { return rate_.load(std::memory_order_relaxed); }
  // The one check on the unlimited path: an atomic load, no lock.
  bool limited() const { return rate() != 0; }

  // Counts `bytes` just moved; returns how long to wait before moving more (zero when within
  // the rate). The bucket holds an eighth of a second's worth, at least 16 KiB.
  std::chrono::nanoseconds charge(std::size_t bytes, std::chrono::steady_clock::time_point now =
                                                         std::chrono::steady_clock::now());

 private:
  std::atomic<std::uint64_t> rate_;
  std::mutex mutex_;
  double level_ = 0;  // bytes that may pass at once; negative: the debt callers are waiting out
  std::chrono::steady_clock::time_point last_{};
  bool started_ = false;
};

}  // namespace burrow::link
