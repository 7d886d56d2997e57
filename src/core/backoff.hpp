// Reconnect delays: exponential backoff with jitter, so agents that lost the same relay do not
// all come back in the same millisecond.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace burrow {

// A fresh seed from std::random_device, for callers that do not need reproducible delays.
std::uint64_t random_seed();

// Attempt n (from 0) waits a uniformly random time in [base/2, base] with
// base = min(cap, first * 2^n); after restart_soon() attempts 0 and 1 wait within first / 4 and
// first / 2, and attempt n + 2 as attempt n would have. Not thread-safe; each reconnect loop owns
// one.
class backoff {
 public:
  explicit backoff(std::chrono::milliseconds first = std::chrono::milliseconds(100),
                   std::chrono::milliseconds cap = std::chrono::seconds(5),
                   std::uint64_t seed = random_seed());

  // The delay before the next attempt; advances the attempt counter.
  std::chrono::milliseconds next();
  // Back to the first delay, after a connection that worked.
  void reset() {
    attempts_ = 0;
    head_start_ = 0;
  }
  // Back to a quarter of the first delay, doubling from there: the peer said it was going away
  // on purpose (a restart, most likely, and a restarted relay listens within milliseconds).
  // Two short attempts come before the usual schedule; reset() ends the head start.
  void restart_soon() {
    attempts_ = 0;
    head_start_ = 2;
  }
  int attempts() const { return attempts_; }

 private:
  std::chrono::milliseconds base(int attempt) const;

  std::chrono::milliseconds first_;
  std::chrono::milliseconds cap_;
  int attempts_ = 0;
  int head_start_ = 0;  // attempts that wait halved first delays before the usual schedule
  std::mt19937_64 rng_;
};

}  // namespace burrow
