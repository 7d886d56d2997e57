// log_limiter (core/log.hpp) for several threads at once: lets a line through at most once per
// interval and counts what it held back, so a flood cannot fill the disk through the log.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace burrow {

class shared_log_limiter {
 public:
  explicit shared_log_limiter(std::chrono::milliseconds interval = std::chrono::seconds(1))
      : interval_(interval.count()) {}

  // True when a line may be written now; `held_back` is then how many were dropped before it.
  bool allow(std::uint64_t& held_back) {
    auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
                   .count();
    auto last = last_.load(std::memory_order_relaxed);
    if (now - last < interval_ || !last_.compare_exchange_strong(last, now)) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    held_back = dropped_.exchange(0, std::memory_order_relaxed);
    return true;
  }

 private:
  std::int64_t interval_;
  std::atomic<std::int64_t> last_{-(1LL << 40)};
  std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace burrow
