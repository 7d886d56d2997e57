// Token bucket: refill by elapsed time, charge, and turn any debt into a wait.
#include "link/rate_limit.hpp"

#include <algorithm>

namespace burrow::link {

rate_limiter::rate_limiter(std::uint64_t rate) : rate_(rate) {}

void rate_limiter::set_rate(std::uint64_t rate) {
  std::lock_guard lock(mutex_);
  if (rate == rate_.load(std::memory_order_relaxed)) return;
  rate_.store(rate, std::memory_order_relaxed);
  started_ = false;  // a new rate starts from a full bucket
}

std::chrono::nanoseconds rate_limiter::charge(std::size_t bytes,
                                              std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(mutex_);
  const auto rate = static_cast<double>(rate_.load(std::memory_order_relaxed));
  if (rate == 0) return std::chrono::nanoseconds(0);
  const double burst = std::max(rate / 8, 16384.0);
  if (!started_) {
    level_ = burst;
    last_ = now;
    started_ = true;
  }
  if (now > last_) {
    level_ = std::min(burst, level_ + rate * std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }
  level_ -= static_cast<double>(bytes);
  if (level_ >= 0) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(static_cast<std::int64_t>(-level_ / rate * 1e9));
}

}  // namespace burrow::link
