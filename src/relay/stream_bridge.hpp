// Joins two streams of two links (a visitor's and an agent's), which may live on two threads:
// bytes, half-closes and resets cross in both directions, and each stream is only ever touched
// on its own link's executor. The relay reads nothing but the frames: for end-to-end services
// the bytes are TLS between the visitor and the agent.
#pragma once

#include <functional>
#include <memory>

namespace burrow::link {
class stream;
}

namespace burrow::relay {

// With no coroutine (link::stream::join): each stream's link reader carries the bytes, straight
// into the other link on one thread, a chunk at a time by posts across two; nothing is held for
// the pair but the two streams. `done` runs once both are finished, on either's thread. Call on
// `a`'s executor.
void join_streams(const std::shared_ptr<link::stream>& a, const std::shared_ptr<link::stream>& b,
                  std::function<void()> done);

}  // namespace burrow::relay
