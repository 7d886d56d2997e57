// The agent's sessions and the stream numbers each has handed out.
#include "e2ee/session_registry.hpp"

namespace burrow::e2ee {

bool replay_window::take(std::uint64_t number) {
  if (number == 0) return false;
  if (number > highest_) {
    const std::uint64_t shift = number - highest_;
    if (shift >= size)
      seen_.reset();
    else
      seen_ <<= static_cast<std::size_t>(shift);
    seen_.set(0);
    highest_ = number;
    return true;
  }
  const std::uint64_t behind = highest_ - number;
  if (behind >= size || seen_.test(static_cast<std::size_t>(behind))) return false;
  seen_.set(static_cast<std::size_t>(behind));
  return true;
}

session_registry::session_registry(std::size_t max_sessions,
                                   std::chrono::steady_clock::duration max_age)
    : max_sessions_(max_sessions), max_age_(max_age) {}

bool session_registry::add(std::shared_ptr<const session_keys> keys, std::size_t service) {
  if (!keys) return false;
  std::lock_guard lock(mutex_);
  if (sessions_.size() >= max_sessions_) return false;
  const std::string id = keys->id();
  return sessions_
      .try_emplace(id, entry{std::move(keys), service, std::chrono::steady_clock::now(), {}})
      .second;
}

void session_registry::remove(const std::string& id) {
  std::lock_guard lock(mutex_);
  sessions_.erase(id);
}

session_registry::stream_keys session_registry::take(std::string_view id, std::uint64_t number,
                                                     std::size_t service) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(std::string(id));
  if (it == sessions_.end() || it->second.service != service) return {verdict::unknown, nullptr};
  if (std::chrono::steady_clock::now() - it->second.born >= max_age_)
    return {verdict::expired, nullptr};
  if (!it->second.window.take(number)) return {verdict::replayed, nullptr};
  return {verdict::ok, it->second.keys};
}

std::size_t session_registry::size() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

}  // namespace burrow::e2ee
