// Stream bridge: the relay's two streams of one visitor, joined with no coroutine.
#include "relay/stream_bridge.hpp"

#include "link/stream.hpp"

namespace burrow::relay {

void join_streams(const std::shared_ptr<link::stream>& a, const std::shared_ptr<link::stream>& b,
                  std::function<void()> done) {
  link::stream::join(a, b, std::move(done));
}

}  // namespace burrow::relay
