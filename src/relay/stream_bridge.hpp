// Joins two streams of two links (a visitor's and an agent's), which may live on two threads:
// bytes, half-closes and resets cross in both directions, and each stream is only ever touched
// on its own link's executor. The relay reads nothing but the frames: for end-to-end services
// the bytes are TLS between the visitor and the agent.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <functional>
#include <memory>

namespace burrow::link {
class stream;
}

namespace burrow::relay {

// Call on `a`'s executor; returns when both directions have finished, both streams done. Made
// for two streams on two executors (on one, join_streams carries them for less), though it
// carries them on one too.
boost::asio::awaitable<void> bridge_streams(std::shared_ptr<link::stream> a,
                                            std::shared_ptr<link::stream> b);

// The same with no coroutine at all (link::stream::join), for two streams on one executor:
// each stream's link reader carries the bytes, and nothing is held for the pair but the two
// streams. `done` runs once both are finished. False when the two live on two executors, and
// then nothing was done: bridge_streams carries them. Call on `a`'s executor.
bool join_streams(const std::shared_ptr<link::stream>& a, const std::shared_ptr<link::stream>& b,
                  std::function<void()> done);

}  // namespace burrow::relay
