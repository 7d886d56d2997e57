// Exponential backoff with jitter for reconnect loops.
#include "core/backoff.hpp"

#include <algorithm>
#include <limits>

namespace burrow {

std::uint64_t random_seed() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd();
}

backoff::backoff(std::chrono::milliseconds first, std::chrono::milliseconds cap, std::uint64_t seed)
    : first_(std::max(first, std::chrono::milliseconds(0))),
      cap_(std::max(cap, std::chrono::milliseconds(0))),
      rng_(seed) {}

std::chrono::milliseconds backoff::base(int attempt) const {
  using rep = std::chrono::milliseconds::rep;
  const rep first = first_.count();
  const rep cap = cap_.count();
  if (first == 0) return first_;
  // first * 2^n <= cap exactly when first <= cap >> n, which never overflows.
  if (attempt >= std::numeric_limits<rep>::digits || first > (cap >> attempt)) {
    return cap_;
  }
  return std::chrono::milliseconds(first << attempt);
}

std::chrono::milliseconds backoff::next() {
  // With a head start the usual schedule comes head_start_ attempts later, after halvings of
  // the first delay.
  const auto b = attempts_ < head_start_ ? base(0).count() >> (head_start_ - attempts_)
                                         : base(attempts_ - head_start_).count();
  if (attempts_ < std::numeric_limits<int>::max()) ++attempts_;
  std::uniform_int_distribution<std::chrono::milliseconds::rep> pick(b / 2, b);
  return std::chrono::milliseconds(pick(rng_));
}

}  // namespace burrow
