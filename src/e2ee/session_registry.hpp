// The agent's end-to-end sessions (docs/protocol.md, section 6c): each lives while its session
// stream is open, for at most max_age, and hands out each stream number once.
#pragma once

#include <bitset>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "e2ee/session_keys.hpp"

namespace burrow::e2ee {

// Stream numbers seen, as IPsec's anti-replay window (RFC 4303, section 3.4.3): a number is taken
// once, and one more than `size` below the highest taken is refused, since it cannot be told from
// one taken before.
class replay_window {
 public:
  static constexpr std::size_t size = 4096;
  // True the first time for `number` (at least 1), false when it was taken or is too old.
  bool take(std::uint64_t number);

 private:
  std::uint64_t highest_ = 0;
  std::bitset<size> seen_;  // bit i: highest_ - i was taken
};

class session_registry {
 public:
  static constexpr std::size_t default_max_sessions = 1024;
  static constexpr std::chrono::hours default_max_age{2};

  explicit session_registry(std::size_t max_sessions = default_max_sessions,
                            std::chrono::steady_clock::duration max_age = default_max_age);

  // A session made on a stream to service `service` (the agent's index), which its streams must
  // name too. False when max_sessions are open already (or the id is taken).
  bool add(std::shared_ptr<const session_keys> keys, std::size_t service);
  void remove(const std::string& id);

  enum class verdict { ok, unknown, expired, replayed };  // unknown: also another service's
  struct stream_keys {
    verdict outcome = verdict::unknown;
    std::shared_ptr<const session_keys> keys;  // with ok
  };
  // The session `id` for stream `number` to `service`: ok once per number, while the session is
  // open and younger than max_age.
  stream_keys take(std::string_view id, std::uint64_t number, std::size_t service);

  std::size_t size() const;

 private:
  struct entry {
    std::shared_ptr<const session_keys> keys;
    std::size_t service;
    std::chrono::steady_clock::time_point born;
    replay_window window;
  };
  std::size_t max_sessions_;
  std::chrono::steady_clock::duration max_age_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, entry> sessions_;
};

}  // namespace burrow::e2ee
