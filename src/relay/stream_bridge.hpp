// Joins two streams of two links (a visitor's and an agent's), which may live on two threads:
// bytes, half-closes and resets cross in both directions, and each stream is only ever touched
// on its own link's executor. The relay reads nothing but the frames: for end-to-end services
// the bytes are TLS between the visitor and the agent.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <memory>

namespace burrow::link {
class stream;
}

namespace burrow::relay {

// Call on `a`'s executor; returns when both directions have finished, both streams done.
boost::asio::awaitable<void> bridge_streams(std::shared_ptr<link::stream> a,
                                            std::shared_ptr<link::stream> b);

}  // namespace burrow::relay
